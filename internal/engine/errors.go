package engine

import (
	"fmt"

	"github.com/cairnhq/cairn/session"
)

func errorf(code session.Code, format string, args ...any) error {
	return &session.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
