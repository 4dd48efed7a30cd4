package debate

import (
	"fmt"
	"strings"
)

// ClaimsDoc is where the claim ids (K2, A8, M1, ...) are defined, as a link from a report in
// results/ or docs/ (both one level below the repository root).
const ClaimsDoc = "../docs/CLAIMS.md"

// claimLinks writes claim ids as Markdown links to their entries in doc (each entry is a
// "### K2" heading, whose anchor is the id in lower case).
func claimLinks(ids []string, doc string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("[%s](%s#%s)", id, doc, strings.ToLower(id))
	}
	return strings.Join(parts, ", ")
}
