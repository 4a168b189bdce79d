package natsrv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func lockTestConfig(dir string) Config {
	return Config{DataDir: dir, Listen: ListenNone, ReadyTimeout: 10 * time.Second}
}

// TestSecondServerOnADataDirIsRefused starts two servers on one data dir:
// the second must be refused, naming the holder, until the first stops.
func TestSecondServerOnADataDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(lockTestConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Start(lockTestConfig(dir))
	if err == nil {
		second.Shutdown()
		first.Shutdown()
		t.Fatal("a second server started on a data dir in use")
	}
	var inUse *DirInUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("second Start: %v, want a DirInUseError naming pid %d", err, os.Getpid())
	}
	want := fmt.Sprintf("data dir %s is in use by another Cairn process (pid %d)", dir, os.Getpid())
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	first.Shutdown()
	first.Shutdown() // a second Shutdown is harmless

	again, err := Start(lockTestConfig(dir))
	if err != nil {
		t.Fatalf("start after the first stopped: %v", err)
	}
	again.Shutdown()
}

// holdEnv makes the test binary, re-run by TestKilledHolderFreesTheDataDir,
// hold a data dir until it is killed.
const holdEnv = "CAIRN_NATSRV_TEST_HOLD_DIR"

// TestKilledHolderFreesTheDataDir kills (SIGKILL) a process that holds the
// data dir: it cannot clean up, and a restart must still succeed.
func TestKilledHolderFreesTheDataDir(t *testing.T) {
	if dir := os.Getenv(holdEnv); dir != "" {
		holdUntilKilled(dir)
		return
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestKilledHolderFreesTheDataDir$")
	child.Env = append(os.Environ(), holdEnv+"="+dir)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "holding" {
		t.Fatalf("child: %q, %v", line, err)
	}

	var inUse *DirInUseError
	if _, err := Start(lockTestConfig(dir)); !errors.As(err, &inUse) || inUse.PID != child.Process.Pid {
		t.Fatalf("Start while the child holds the dir: %v, want a DirInUseError naming pid %d", err, child.Process.Pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	s, err := Start(lockTestConfig(dir))
	if err != nil {
		t.Fatalf("start after the holder was killed: %v", err)
	}
	s.Shutdown()
}

// holdUntilKilled is the child's side: start, say so, wait for SIGKILL.
func holdUntilKilled(dir string) {
	if _, err := Start(lockTestConfig(dir)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	fmt.Println("holding")
	select {}
}
