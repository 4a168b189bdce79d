package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn/events"
	"github.com/cairnhq/cairn/testenv"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterEvents is how many events the cluster tests publish: enough that a
// reader creating a consumer per message would meet the race between a new
// consumer and its first pull request many times over.
const clusterEvents = 200

// newClusterEvents starts a 3-node cluster with Cairn's streams at R3 and
// publishes n skipped events, returning the cluster.
func newClusterEvents(t *testing.T, n int) *testenv.ClusterEnv {
	t.Helper()
	c, _ := testenv.CairnCluster(t, 3, testenv.Options{})
	publishSkipped(t, c.JetStream(t), 0, n)
	return c
}

// publishSkipped publishes skipped events for requests r<from>..r<from+n-1>,
// each with its event id as Nats-Msg-Id so that a retried publish is stored
// once. Publishes retry until the stream has a leader again.
func publishSkipped(t *testing.T, js jetstream.JetStream, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		ev := events.Skipped{Header: header(fmt.Sprintf("r%d", i), events.KindSkipped), Reason: "below_trigger"}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := js.Publish(ctx, events.SubjectSkipped, b, jetstream.WithMsgID(ev.EventID))
			return err
		})
	}
}

// sequenceCheck records delivered stream sequences and reports the first
// duplicate or gap against the expected 1, 2, 3, ...
type sequenceCheck struct {
	next uint64
	err  error
}

func (s *sequenceCheck) see(seq uint64) {
	if s.next == 0 {
		s.next = 1
	}
	if s.err == nil && seq != s.next {
		s.err = fmt.Errorf("delivered sequence %d where %d was expected", seq, s.next)
	}
	s.next = seq + 1
}

// Follow and WaitOutcome read every event on a cluster, from a node that does
// not lead the stream, with R3 streams.
func TestFollowReadsEveryEventOnACluster(t *testing.T) {
	c := newClusterEvents(t, clusterEvents)
	js := c.Node(c.Follower(t, events.StreamEvents)).JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	for _, subjects := range [][]string{nil, {events.SubjectSkipped}} {
		var check sequenceCheck
		got := 0
		fctx, fcancel := context.WithCancel(ctx)
		err := events.Follow(fctx, js, events.FollowOptions{FromStart: true, Subjects: subjects}, func(ev events.Event) error {
			check.see(ev.Sequence)
			if got++; got == clusterEvents {
				fcancel()
			}
			return nil
		})
		fcancel()
		if got != clusterEvents || check.err != nil {
			t.Fatalf("Follow(subjects %v) read %d of %d events (%v), ended with %v", subjects, got, clusterEvents, check.err, err)
		}
	}

	since := time.Now().Add(-time.Minute)
	for _, id := range []string{"r0", fmt.Sprintf("r%d", clusterEvents/2), fmt.Sprintf("r%d", clusterEvents-1)} {
		ev, err := events.WaitOutcome(ctx, js, id, since)
		if err != nil || ev.Skipped == nil || ev.RequestID() != id {
			t.Fatalf("WaitOutcome(%s) = %+v, %v", id, ev, err)
		}
	}
}

// Follow keeps reading, without a duplicate or a gap, when the node leading
// the events stream dies under it, and goes on to deliver events published
// after the new leader took over.
func TestFollowSurvivesStreamLeaderLoss(t *testing.T) {
	c := newClusterEvents(t, clusterEvents)
	leader := c.StreamLeader(t, events.StreamEvents)
	// The reader's connection is to the leader, so it loses its server as
	// well as the stream's leader.
	js := c.Node(leader).JetStream(t)
	followThrough(t, js, clusterEvents/4, clusterEvents+clusterEvents/2, func() {
		c.Node(leader).Shutdown()
		publishSkipped(t, c.Node((leader+1)%c.Size()).JetStream(t), clusterEvents, clusterEvents/2)
	})
}

// followThrough follows the events stream from the start; after pauseAt
// events it pauses to run disrupt, which must publish the events that make
// the stream's total, and then checks that Follow delivers all of them
// once each, in order.
func followThrough(t *testing.T, js jetstream.JetStream, pauseAt, total int, disrupt func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	reached, resume := make(chan struct{}), make(chan struct{})
	var check sequenceCheck
	got := 0
	done := make(chan error, 1)
	go func() {
		done <- events.Follow(ctx, js, events.FollowOptions{FromStart: true}, func(ev events.Event) error {
			check.see(ev.Sequence)
			got++
			if got == pauseAt {
				close(reached)
				select {
				case <-resume:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if got == total {
				return errStop
			}
			return nil
		})
	}()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("Follow ended before the disruption: %v (read %d)", err, got)
	}
	began := time.Now()
	func() {
		defer close(resume)
		disrupt()
	}()
	if err := <-done; err != errStop || got != total || check.err != nil {
		t.Fatalf("Follow read %d of %d events (%v), ended with %v", got, total, check.err, err)
	}
	t.Logf("read the rest %s after the disruption began", time.Since(began))
}

// The same on a cluster of separate nats-server processes, where the stream
// leader is killed outright and the reader is connected to another node.
func TestFollowOnSeparateServerProcesses(t *testing.T) {
	c := testenv.ProcessCluster(t, 3)
	js := testenv.JetStream(t, c.Conn(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	testenv.Stores(t, js, 3)
	publishSkipped(t, js, 0, clusterEvents)
	leader := c.StreamLeader(t, events.StreamEvents)
	reader := testenv.JetStream(t, c.NodeConn(t, (leader+1)%c.Size()))
	var check sequenceCheck
	got := 0
	fctx, fcancel := context.WithCancel(ctx)
	err := events.Follow(fctx, reader, events.FollowOptions{FromStart: true}, func(ev events.Event) error {
		check.see(ev.Sequence)
		if got++; got == clusterEvents {
			fcancel()
		}
		return nil
	})
	fcancel()
	if got != clusterEvents || check.err != nil {
		t.Fatalf("Follow read %d of %d events (%v), ended with %v", got, clusterEvents, check.err, err)
	}
	last := fmt.Sprintf("r%d", clusterEvents-1)
	if ev, err := events.WaitOutcome(ctx, reader, last, time.Now().Add(-time.Minute)); err != nil || ev.RequestID() != last {
		t.Fatalf("WaitOutcome(%s) = %+v, %v", last, ev, err)
	}
	followThrough(t, reader, clusterEvents/4, clusterEvents+clusterEvents/2, func() {
		c.Kill(t, leader)
		publishSkipped(t, js, clusterEvents, clusterEvents/2)
	})
}

// errStop ends a Follow once the test has read what it waited for.
var errStop = fmt.Errorf("stop")

// Follow rides out a restart of its (single) server: it resumes after the
// last event it delivered and delivers the events published afterwards.
func TestFollowSurvivesServerRestart(t *testing.T) {
	srv := testenv.NATS(t, testenv.Options{})
	js := srv.JetStream(t)
	testenv.Stores(t, js, 1)
	const before, after = 20, 20
	publishSkipped(t, js, 0, before)
	followThrough(t, js, before, before+after, func() {
		srv.Restart(t)
		publishSkipped(t, js, before, after)
	})
}
