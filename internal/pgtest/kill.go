package pgtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// killAll kills postgres (pid) and its backends with SIGKILL, and waits
// until each has exited. Each backend leads a process group of its own
// (postgres calls setsid in every child), so no one signal reaches them
// all; and a backend that outlived postgres would go on serving its
// connection until it noticed, and would keep postgres from starting again
// while it holds the old shared memory. postgres is stopped first so that
// it forks no backend after its children are listed.
func killAll(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	children := childrenOf(pid)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range children {
		for alive(c) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // waiting for a killed process's exit, bounded by the deadline
		}
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := stat(child); ok && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid is a process that has not exited: neither gone
// nor a zombie (a killed backend whose new parent has not reaped it yet
// holds nothing any more).
func alive(pid int) bool {
	_, state, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// stat is pid's parent and state from /proc/<pid>/stat.
func stat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// removeShm removes the System V shared memory segment of a killed
// server, which postgres names on the seventh line of postmaster.pid
// ("key id"); postgres removes it itself only when it shuts down.
func (s *Server) removeShm() {
	b, err := os.ReadFile(filepath.Join(s.dir, "data", "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return
	}
	if id, err := strconv.Atoi(f[1]); err == nil {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}
}

// Pause stops the server and its backends (SIGSTOP), as a host that froze
// would: connections stay open and nothing answers on them, until
// Continue. Not safe for concurrent use with Stop or Close.
func (s *Server) Pause() {
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, c := range childrenOf(pid) {
		_ = syscall.Kill(c, syscall.SIGSTOP)
	}
}

// Continue resumes a paused server and its backends (SIGCONT).
func (s *Server) Continue() {
	pid := s.cmd.Process.Pid
	for _, c := range childrenOf(pid) {
		_ = syscall.Kill(c, syscall.SIGCONT)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
}
