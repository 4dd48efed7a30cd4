package checker

import (
	"fmt"
	"strconv"
)

// CollateralExpect is a scenario's expect.collateral: bounds on the harm done to legitimate
// holders (Collateral). max_* keeps a correct design honest (0 for none); min_* shows a broken one
// is caught.
type CollateralExpect struct {
	MaxFailedReleases  *int `yaml:"max_failed_releases" json:"max_failed_releases,omitempty"`
	MinFailedReleases  *int `yaml:"min_failed_releases" json:"min_failed_releases,omitempty"`
	MaxLegitRejections *int `yaml:"max_legit_rejections" json:"max_legit_rejections,omitempty"`
	MinLegitRejections *int `yaml:"min_legit_rejections" json:"min_legit_rejections,omitempty"`
	MaxTokenAnomalies  *int `yaml:"max_token_anomalies" json:"max_token_anomalies,omitempty"`
	MinTokenAnomalies  *int `yaml:"min_token_anomalies" json:"min_token_anomalies,omitempty"`
}

// bound is one figure of Collateral with its min and max fields.
type collateralBound struct {
	name     string // failed_releases, legit_rejections, token_anomalies
	min, max *int
	got      func(Collateral) (int, string)
}

func (c *CollateralExpect) bounds() []collateralBound {
	return []collateralBound{
		{"failed_releases", c.MinFailedReleases, c.MaxFailedReleases, func(v Collateral) (int, string) {
			return v.FailedReleases, countByClient(v.FailedReleases, v.FailedByClient)
		}},
		{"legit_rejections", c.MinLegitRejections, c.MaxLegitRejections, func(v Collateral) (int, string) {
			return v.LegitRejections, countByClient(v.LegitRejections, v.RejectedByClient)
		}},
		{"token_anomalies", c.MinTokenAnomalies, c.MaxTokenAnomalies, func(v Collateral) (int, string) {
			return v.TokenAnomalies, tokenCell(v)
		}},
	}
}

func (e Expect) validateCollateral() []error {
	c := e.Collateral
	if c == nil {
		return nil
	}
	var errs []error
	for _, b := range c.bounds() {
		for _, f := range []struct {
			prefix string
			n      *int
		}{{"min_", b.min}, {"max_", b.max}} {
			if f.n != nil && *f.n < 0 {
				errs = append(errs, fmt.Errorf("expect.collateral.%s%s: %d is negative", f.prefix, b.name, *f.n))
			}
		}
		if b.min != nil && b.max != nil && *b.min > *b.max {
			errs = append(errs, fmt.Errorf("expect.collateral.min_%s: %d is above max_%s %d", b.name, *b.min, b.name, *b.max))
		}
	}
	return errs
}

func (e Expect) matchCollateral(v Verdict) []Mismatch {
	c := e.Collateral
	if c == nil {
		return nil
	}
	var out []Mismatch
	for _, b := range c.bounds() {
		got, text := b.got(v.Collateral)
		if b.max != nil && got > *b.max {
			out = append(out, Mismatch{"collateral.max_" + b.name, strconv.Itoa(*b.max), text})
		}
		if b.min != nil && got < *b.min {
			out = append(out, Mismatch{"collateral.min_" + b.name, strconv.Itoa(*b.min), text})
		}
	}
	return out
}
