package authz

import "context"

// Request is what the door tells of the request a call belongs to.
type Request struct {
	// Name is the request's catalogue name (cards.update).
	Name string
	// ID is the request's id.
	ID string
	// Write marks a request that changes something: only its refusals are recorded.
	Write bool
}

type requestKey struct{}
type jobKey struct{}
type actingKey struct{}

// job is the service's own work that writes.
type job struct{ name, action string }

// WithRequest returns a context that carries r.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the request carried by ctx.
func RequestFrom(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}

// AsJob returns a context for the service's own job named name (refresh, expire), doing what
// the request action does: its writes are recorded as principal agentcards:<name> with action.
func AsJob(ctx context.Context, name, action string) context.Context {
	return context.WithValue(ctx, jobKey{}, job{name: name, action: action})
}

// As returns a context whose writes are recorded as principal's: a caller that proved who it
// is without a token (an agent reporting a result with its delegation's callback token).
func As(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, actingKey{}, principal)
}

// Actor returns who acts in ctx and the action: the job's (AsJob), else the request's
// principal (As, or the token's) and name; fallback names the action when ctx says none (a
// store's name for the write), and agentcards:service is the principal when ctx carries none.
func Actor(ctx context.Context, fallback string) (principal, action, requestID string) {
	if j, ok := ctx.Value(jobKey{}).(job); ok {
		return JobPrefix + j.name, j.action, ""
	}
	action = fallback
	if r, ok := RequestFrom(ctx); ok {
		action, requestID = r.Name, r.ID
	}
	principal = JobPrefix + "service"
	if p, ok := ctx.Value(actingKey{}).(string); ok {
		principal = p
	} else if p, ok := PrincipalFrom(ctx); ok {
		principal = p.Subject
	}
	return principal, action, requestID
}
