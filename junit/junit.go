// Package junit writes JUnit XML, the test-report format CI systems (GitHub Actions reporters,
// GitLab, Jenkins) display: one test case per scenario run or matrix cell, failed when the run
// did not reach what was required of it.
package junit

import (
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// Case is one scenario run or matrix cell.
type Case struct {
	Name      string
	ClassName string        // e.g. "lockcheck.run.<scenario>" or "lockcheck.matrix.<lock>"
	Time      time.Duration // wall time of the run
	Failure   string        // empty: passed; else a one-line reason
	Detail    string        // longer text shown with a failure (mismatches, the verdict)
	Error     string        // the harness itself failed (servers did not start): neither pass nor fail
	Output    string        // system-out: the verdict summary and the run folder
}

// Suite is one invocation of lockcheck.
type Suite struct {
	Name  string
	Cases []Case
}

type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Time     string     `xml:"time,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Errors   int       `xml:"errors,attr"`
	Time     string    `xml:"time,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Name      string      `xml:"name,attr"`
	ClassName string      `xml:"classname,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *xmlProblem `xml:"failure,omitempty"`
	Error     *xmlProblem `xml:"error,omitempty"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type xmlProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Marshal renders suite as a JUnit XML document.
func Marshal(s Suite) ([]byte, error) {
	xs := xmlSuite{Name: s.Name}
	var total time.Duration
	for _, c := range s.Cases {
		xc := xmlCase{Name: c.Name, ClassName: c.ClassName, Time: seconds(c.Time), SystemOut: c.Output}
		switch {
		case c.Error != "":
			xc.Error = &xmlProblem{Message: c.Error, Text: c.Detail}
			xs.Errors++
		case c.Failure != "":
			xc.Failure = &xmlProblem{Message: c.Failure, Text: c.Detail}
			xs.Failures++
		}
		total += c.Time
		xs.Cases = append(xs.Cases, xc)
	}
	xs.Tests = len(s.Cases)
	xs.Time = seconds(total)
	doc := xmlSuites{Tests: xs.Tests, Failures: xs.Failures, Errors: xs.Errors, Time: xs.Time, Suites: []xmlSuite{xs}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// WriteFile writes suite to path.
func WriteFile(path string, s Suite) error {
	out, err := Marshal(s)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

// ReadFile reads a JUnit file this package wrote (or one like it) back into a Suite; the cases of
// every testsuite in it are put together. Merging shards' reports is ReadFile each, then one
// WriteFile of all their cases.
func ReadFile(path string) (Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Suite{}, fmt.Errorf("read JUnit report: %w", err)
	}
	var doc xmlSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		return Suite{}, fmt.Errorf("%s: not a JUnit report: %w", path, err)
	}
	var s Suite
	for i, xs := range doc.Suites {
		if i == 0 {
			s.Name = xs.Name
		}
		for _, xc := range xs.Cases {
			c := Case{Name: xc.Name, ClassName: xc.ClassName, Output: xc.SystemOut}
			if xc.Time != "" {
				secs, err := strconv.ParseFloat(xc.Time, 64)
				if err != nil {
					return Suite{}, fmt.Errorf("%s: test case %q: time %q: %w", path, xc.Name, xc.Time, err)
				}
				c.Time = time.Duration(math.Round(secs*1000)) * time.Millisecond // written in ms
			}
			if xc.Failure != nil {
				c.Failure, c.Detail = xc.Failure.Message, xc.Failure.Text
			}
			if xc.Error != nil {
				c.Error, c.Detail = xc.Error.Message, xc.Error.Text
			}
			s.Cases = append(s.Cases, c)
		}
	}
	return s, nil
}
