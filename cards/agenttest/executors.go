package agenttest

import (
	"context"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// The A2A executors (the behaviour behind NewA2A or Interface.Handler) that tests of more than
// one file share; a behaviour one test file needs lives with that file.

// Verbose is an A2A executor that answers each message with a text of N bytes.
type Verbose struct{ N int }

// Execute answers with N bytes of text.
func (v Verbose) Execute(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(strings.Repeat("x", v.N))), nil)
	}
}

// Cancel refuses: there is never a task to cancel.
func (Verbose) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrTaskNotCancelable) }
}

// Slow is an A2A executor that takes each task on at once (submitted, then working) and
// completes it with an artifact of text Artifact only when Release lets it, as long-running
// agents do.
type Slow struct {
	Release  chan struct{}
	Artifact string
}

// Execute takes the task on, waits for Release (or the end of ctx), and completes it.
func (s Slow) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) ||
			!yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		select {
		case <-s.Release:
		case <-ctx.Done():
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(s.Artifact)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel cancels the task.
func (Slow) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
