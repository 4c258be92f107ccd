package tenants

import "time"

// SetCacheClock makes the row cache of s read the time from clock.
func SetCacheClock(s *Service, clock func() time.Time) { s.clock = clock }
