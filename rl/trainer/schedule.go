package trainer

import (
	"fmt"
	"math"
)

// Schedule is a learning-rate schedule: linear warm-up from 0 to Peak over Warmup steps, then a
// decay to Peak·MinRatio at step Total (and constant after), as Hugging Face's
// get_cosine_schedule_with_warmup / get_linear_schedule_with_warmup (with a floor) and verl's
// actor lr_warmup_steps + warmup_style do.
type Schedule struct {
	Peak     float64 // learning rate at the end of warm-up
	Warmup   int     // warm-up steps (0: start at Peak)
	Total    int     // step at which the decay ends
	Decay    LRDecay // cosine, linear or constant
	MinRatio float64 // final rate as a fraction of Peak
}

// Validate reports an unknown decay or a bad ratio.
func (s Schedule) Validate() error {
	if _, err := ParseLRDecay(string(s.Decay)); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if s.MinRatio < 0 || s.MinRatio > 1 || s.Peak < 0 || s.Warmup < 0 {
		return fmt.Errorf("schedule: peak %g warmup %d min ratio %g out of range", s.Peak, s.Warmup, s.MinRatio)
	}
	return nil
}

// LR returns the learning rate of (0-based) step:
//
//	step < Warmup:  Peak·(step+1)/Warmup
//	after:          Peak·(MinRatio + (1−MinRatio)·f(p)),  p = (step−Warmup)/(Total−Warmup) clamped to [0,1],
//	                f(p) = (1+cos(πp))/2 (cosine), 1−p (linear), 1 (constant).
func (s Schedule) LR(step int) float64 {
	if step < s.Warmup {
		return s.Peak * float64(step+1) / float64(s.Warmup)
	}
	span := s.Total - s.Warmup
	p := 1.0
	if span > 0 {
		p = math.Min(1, math.Max(0, float64(step-s.Warmup)/float64(span)))
	}
	var f float64
	switch s.Decay {
	case DecayCosine:
		f = 0.5 * (1 + math.Cos(math.Pi*p))
	case DecayLinear:
		f = 1 - p
	default:
		f = 1
	}
	return s.Peak * (s.MinRatio + (1-s.MinRatio)*f)
}
