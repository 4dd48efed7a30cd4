package providers

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// LogTail returns the last lines written to a server's log from offset on (at most 4 KB): what a
// start that failed says about why.
func LogTail(path string, offset int64) string {
	const max = 4096
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if st.Size()-offset > max {
		offset = st.Size() - max
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, st.Size()-offset))
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return "(log empty)"
	}
	return s
}
