package storage

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// TestConnLost: the errors of a connection that no longer leads to a server taking writes are
// told from those of a statement refused, or of a server that is only slow.
func TestConnLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{fmt.Errorf("create card: %w", io.ErrUnexpectedEOF), true},
		{&pgconn.PgError{Code: "57P01"}, true}, // terminating connection due to administrator command
		{&pgconn.PgError{Code: "25006"}, true}, // cannot execute INSERT in a read-only transaction
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "40P01"}, false},
		{gorm.ErrDuplicatedKey, false},
		{context.DeadlineExceeded, false},
		{os.ErrDeadlineExceeded, false}, // a network timeout: the server may still be at work
		{&pgconn.ConnectError{}, false}, // no server to connect to: the gate's to find out
	} {
		if got := connLost(c.err); got != c.lost {
			t.Errorf("connLost(%v) = %t, want %t", c.err, got, c.lost)
		}
	}
}
