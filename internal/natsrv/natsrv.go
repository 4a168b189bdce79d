// Package natsrv runs the embedded NATS JetStream server that Cairn uses when no external server is configured.
package natsrv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ListenNone disables the loopback client listener: only in-process clients
// can connect.
const ListenNone = "none"

// Config configures the embedded server.
type Config struct {
	// DataDir holds JetStream's file storage. It must be persistent and used by
	// one server only: Start locks it, and refuses with a *DirInUseError while
	// another server holds it.
	DataDir string
	// Listen is host:port of the client listener, or ListenNone.
	Listen string
	// ConfigFile is an optional nats.conf loaded into the server; DataDir and
	// Listen override its store_dir and listen settings.
	ConfigFile string
	// ReadyTimeout bounds how long Start waits for the server.
	ReadyTimeout time.Duration
	// Logs enables the server's own log output on stderr.
	Logs bool
}

// Validate reports the first setting out of bounds.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("natsrv: DataDir is required")
	}
	if c.ReadyTimeout <= 0 {
		return errors.New("natsrv: ReadyTimeout must be positive")
	}
	if c.Listen != ListenNone {
		if _, _, err := splitListen(c.Listen); err != nil {
			return err
		}
	}
	return nil
}

// Server is a running embedded nats-server with JetStream.
type Server struct {
	srv  *server.Server
	lock *dirLock
}

// Start locks the data dir, starts the server and waits until it accepts
// connections.
func Start(c Config) (*Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts, err := options(c)
	if err != nil {
		return nil, err
	}
	lock, err := lockDir(opts.StoreDir, c.DataDir)
	if err != nil {
		return nil, err
	}
	s, err := start(c, opts)
	if err != nil {
		lock.release()
		return nil, err
	}
	s.lock = lock
	return s, nil
}

// start runs the server of opts once its data dir is locked.
func start(c Config, opts *server.Options) (*Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsrv: %w", err)
	}
	if c.Logs {
		srv.ConfigureLogger()
	}
	go srv.Start()
	if !srv.ReadyForConnections(c.ReadyTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("natsrv: server not ready after %s (is %s already in use?)", c.ReadyTimeout, c.Listen)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("natsrv: JetStream did not start; check the data directory and the config file")
	}
	return &Server{srv: srv}, nil
}

func options(c Config) (*server.Options, error) {
	opts := &server.Options{}
	if c.ConfigFile != "" {
		loaded, err := server.ProcessConfigFile(c.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("natsrv: load %s: %w", c.ConfigFile, err)
		}
		opts = loaded
	}
	dir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("natsrv: data dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("natsrv: data dir: %w", err)
	}
	opts.JetStream = true
	opts.StoreDir = dir
	opts.NoSigs = true
	opts.NoLog = !c.Logs
	if opts.ServerName == "" {
		opts.ServerName = "cairn"
	}
	if c.Listen == ListenNone {
		opts.DontListen = true
	} else {
		host, port, _ := splitListen(c.Listen)
		opts.Host, opts.Port = host, port
	}
	return opts, nil
}

func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("natsrv: listen %q is not host:port or %q: %w", listen, ListenNone, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("natsrv: listen %q has an invalid port", listen)
	}
	return host, port, nil
}

// Connect opens a client connection over the in-process pipe, reconnecting
// forever. Extra options (credentials, names, handlers) are appended.
func (s *Server) Connect(extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{nats.InProcessServer(s.srv), nats.MaxReconnects(-1)}, extra...)
	return nats.Connect("", opts...)
}

// ClientURL is the loopback URL other processes can use, or "" when the server
// does not listen.
func (s *Server) ClientURL() string {
	if s.srv.Addr() == nil {
		return ""
	}
	return s.srv.ClientURL()
}

// Shutdown stops the server, waits until it has stopped, and then unlocks
// the data dir.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	if s.lock != nil {
		s.lock.release()
	}
}
