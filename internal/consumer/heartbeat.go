package consumer

import (
	"context"
	"time"
)

// heartbeat sends InProgress every AckWait/3 while the request works, so a
// slow model call does not make the server redeliver it.
func (p *Processor) heartbeat(next handler) handler {
	interval := max(p.cfg.AckWait/3, 100*time.Millisecond)
	return func(ctx context.Context, d *delivery) error {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if err := d.msg.InProgress(); err != nil {
						p.log.Debug("consumer: in-progress heartbeat failed", "err", err)
					}
				}
			}
		}()
		err := next(ctx, d)
		close(stop)
		<-done // no heartbeat may follow the settle
		return err
	}
}
