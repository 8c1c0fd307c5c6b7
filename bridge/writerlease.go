package bridge

import (
	"context"
	"fmt"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/tiering"
)

// warehouseFS is the warehouse's file IO and its URI.
func warehouseFS(ctx context.Context, c iceberg.CatalogConfig) (icebergio.WriteFileIO, string, error) {
	wh, err := c.WarehouseURI()
	if err != nil {
		return nil, "", err
	}
	fsys, err := icebergio.LoadFS(ctx, c.IOProps(), wh)
	if err != nil {
		return nil, "", fmt.Errorf("warehouse %s: %w", wh, err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, "", fmt.Errorf("warehouse %s: its file IO cannot write", wh)
	}
	return wfs, wh, nil
}

// holdWriterLease writes the slot's writer lease in the warehouse (see
// tiering.WriteLease: what tells pg2iceberg maintain that files of commits
// in flight may be about) and refreshes it every tiering.LeaseRefresh on a
// goroutine of its own, until stop, which joins that goroutine and
// removes the lease. A refresh that fails is logged and tried again at the
// next one: the data commits do not depend on it.
func (b *bridge) holdWriterLease(ctx context.Context) (stop func(), err error) {
	fsys, wh, err := warehouseFS(context.WithoutCancel(ctx), b.cfg.Catalog)
	if err != nil {
		return nil, err
	}
	if err := tiering.WriteLease(fsys, wh, b.cfg.Slot); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}) // closed by the refresher when it returns
	go func() {
		defer close(done)
		tick := time.NewTicker(tiering.LeaseRefresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := tiering.WriteLease(fsys, wh, b.cfg.Slot); err != nil {
					b.log.Warn("writer lease refresh failed; trying again", "error", err, "retry_in", tiering.LeaseRefresh)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		if err := tiering.RemoveLease(fsys, wh, b.cfg.Slot); err != nil {
			b.log.Warn("writer lease not removed; pg2iceberg maintain takes it for a killed bridge's once it is stale", "error", err)
		}
	}, nil
}
