package session_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/session"
)

// Every constant of an enum type is in its All… list, in the order it is
// declared, so the OpenAPI enums (generated from the lists) and the
// clients' types never miss a value.
func TestEnumListsAreEveryConstant(t *testing.T) {
	t.Parallel()
	declared := map[string][]string{} // type → its constants' values, in order
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				id, ok := v.Type.(*ast.Ident)
				if !ok || len(v.Values) != 1 {
					continue
				}
				lit, ok := v.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				declared[id.Name] = append(declared[id.Name], s)
			}
		}
	}
	lists := map[string][]string{
		"Kind": strs(session.AllKinds()), "Status": strs(session.AllStatuses()), "Action": strs(session.AllActions()),
		"Mode": strs(session.AllModes()), "CancelScope": strs(session.AllCancelScopes()), "OnTimeout": strs(session.AllOnTimeouts()),
		"Decider": strs(session.AllDeciders()), "ExpiryAction": strs(session.AllExpiryActions()), "Field": strs(session.AllFields()), "EventType": strs(session.AllEventTypes()),
		"Via": strs(session.AllVias()), "ApprovalStatus": strs(session.AllApprovalStatuses()), "PreviewFormat": strs(session.AllPreviewFormats()),
	}
	for typ, list := range lists {
		if got := declared[typ]; !slices.Equal(got, list) {
			t.Errorf("%s: declared %v, listed %v", typ, got, list)
		}
	}
}

func strs[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
