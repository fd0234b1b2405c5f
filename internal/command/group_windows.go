//go:build windows

package command

import (
	"os/exec"
	"syscall"
)

// OwnGroup makes cmd, once started, the root of a new process group.
func OwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// KillGroup kills a command started with OwnGroup. Windows has no signal
// for a whole group: the process itself is killed, and children it
// started outlive it unless they watch their parent.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
