//go:build !unix && !windows

package command

import "os/exec"

// OwnGroup does nothing where processes have no groups.
func OwnGroup(cmd *exec.Cmd) {}

// KillGroup kills the process itself.
func KillGroup(cmd *exec.Cmd) error {
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
