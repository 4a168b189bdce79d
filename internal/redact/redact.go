// Package redact finds and masks secrets in text.
package redact

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match is one secret found in a string: the byte range [Start, End) that is
// masked and the class of secret it holds. For secrets that sit inside a larger
// construct (a password in a URL, the value of a password= assignment) the
// range covers the secret value only.
type Match struct {
	Class string
	Start int
	End   int
}

// Secret classes reported in Match.Class and in the redaction marker.
const (
	ClassOpenAIKey          = "openai_api_key"
	ClassAnthropicKey       = "anthropic_api_key"
	ClassAWSAccessKey       = "aws_access_key"
	ClassGitHubToken        = "github_token"
	ClassSlackToken         = "slack_token"
	ClassJWT                = "jwt"
	ClassPrivateKey         = "private_key"
	ClassURLPassword        = "url_password"
	ClassPasswordAssignment = "password_assignment"
)

// detector finds one class of secret. Scanning a whole text with a regexp per
// class is slow, so each detector names literal anchors (a prefix every match
// contains); the regexp, anchored with ^, runs only where an anchor occurs.
// Kept by the speed rule (docs/architecture.md, "Speed work") on
// BenchmarkFairProcessor/generated=100 (internal/consumer).
//
// The regexp's group named "v", when present, is the part that is masked;
// otherwise the whole match is. accept, when set, rejects matches that look
// like prose rather than a secret.
type detector struct {
	class   string
	anchors []string
	// fold searches anchors in an ASCII-lower-cased copy of the text.
	fold bool
	// word requires a non-word byte (or the start of text) before the match.
	word bool
	// scheme starts the match at the URL scheme before the anchor "://".
	scheme bool
	re     *regexp.Regexp
	accept func(s string, loc, value []int) bool
	// mayMatch, when set, is a quick test every match passes at the anchor
	// found at offset at: the regexp is run only where it holds. Prose says
	// "token" and logs print URLs far more often than they hold secrets.
	mayMatch func(s string, at int) bool
}

// detectors run in priority order: on two matches with the same start and
// length, the earlier detector's class wins (sk-ant- is Anthropic, not OpenAI).
// PEM private keys are found by scanPEM, ahead of all of them.
var detectors = []detector{
	{
		class:   ClassAnthropicKey,
		anchors: []string{"sk-ant-"},
		word:    true,
		re:      anchored(`sk-ant-[A-Za-z0-9_\-]{20,}`),
	},
	{
		class:   ClassOpenAIKey,
		anchors: []string{"sk-"},
		word:    true,
		re:      anchored(`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`),
	},
	{
		class:   ClassAWSAccessKey,
		anchors: []string{"AKIA", "ASIA"},
		word:    true,
		re:      anchored(`(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
	},
	{
		class:   ClassGitHubToken,
		anchors: []string{"gh", "github_pat_"},
		word:    true,
		re:      anchored(`(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b`),
	},
	{
		class:   ClassSlackToken,
		anchors: []string{"xox"},
		word:    true,
		re:      anchored(`xox[bpars]-[A-Za-z0-9\-]{10,}`),
	},
	{
		class:   ClassJWT,
		anchors: []string{"eyJ"},
		word:    true,
		re:      anchored(`eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
	},
	{
		class:    ClassURLPassword,
		anchors:  []string{"://"},
		scheme:   true,
		re:       anchored(`[A-Za-z][A-Za-z0-9+.\-]{0,20}://[^\s:/@]+:(?P<v>[^\s/]+)@`),
		mayMatch: userPasswordFollows,
	},
	{
		class:   ClassPasswordAssignment,
		anchors: []string{"passw", "pwd", "secret", "token", "api"},
		fold:    true,
		re: anchored(`(?i)(?P<k>password|passwd|pwd|secret|token|api[_\-]?key)["']?[ \t]*(?P<op>[:=])[ \t]*` +
			`(?:"(?P<v>[^"\n]+)"|'(?P<v>[^'\n]+)'|(?P<v>[^\s"'<>&,;()]+))`),
		accept:   acceptAssignment,
		mayMatch: operatorFollows,
	},
	{
		// The English form of 密码是: "the admin password is hunter2!".
		class:    ClassPasswordAssignment,
		anchors:  []string{"passw", "passcode"},
		fold:     true,
		re:       anchored(`(?i)(?:password|passwd|passcode)[ \t]+(?:is|was)[ \t]+(?:"(?P<v>[^"\n]+)"|'(?P<v>[^'\n]+)'|(?P<v>[^\s"'<>,;()]+))`),
		accept:   acceptSpokenPassword,
		mayMatch: blankFollows,
	},
	{
		class:   ClassPasswordAssignment,
		anchors: []string{"密码"},
		re:      anchored(`密码(?:是|为|[:：])[ \t]*(?P<v>[^\s，。；、,;"'“”]+)`),
	},
}

// pemStart begins every private key block's header.
const pemStart = "-----BEGIN"

// longestKey is the most bytes a key of the assignment detectors spans:
// "api_" and "ey" around a Kelvin sign, which (?i) takes for k.
const longestKey = len("api_\u212aey")

// operatorFollows reports whether the key at s[at] is followed by what
// follows an assignment's key: an optional quote, spaces or tabs, and ':' or
// '='. The key is taken as the run of letters, '_', '-' and non-ASCII bytes
// there, which a key is made of and what follows it is not; a run longer
// than any key is a longer word.
func operatorFollows(s string, at int) bool {
	j, ok := skipKey(s, at)
	if !ok {
		return false
	}
	if j < len(s) && (s[j] == '"' || s[j] == '\'') {
		j++
	}
	j = skipBlanks(s, j)
	return j < len(s) && (s[j] == ':' || s[j] == '=')
}

// blankFollows reports whether the key at s[at] is followed by a space or
// a tab, as the key of "password is ..." is.
func blankFollows(s string, at int) bool {
	j, ok := skipKey(s, at)
	return ok && j < len(s) && (s[j] == ' ' || s[j] == '\t')
}

// userPasswordFollows reports whether the "://" at s[at] is followed by a
// user, ':', and a password ending at '@', as a URL with a password is:
// "user:password@" within a run of text without white space or '/'.
func userPasswordFollows(s string, at int) bool {
	j := at + len("://")
	user := j
	for j < len(s) && !isURLSpace(s[j]) && s[j] != ':' && s[j] != '/' && s[j] != '@' {
		j++
	}
	if j == user || j == len(s) || s[j] != ':' {
		return false
	}
	password := j + 1
	for j = password; j < len(s) && !isURLSpace(s[j]) && s[j] != '/'; j++ {
		if s[j] == '@' && j > password {
			return true
		}
	}
	return false
}

// skipKey returns the end of the run of letters, '_', '-' and non-ASCII
// bytes at s[at], and false when it is longer than longestKey. It looks
// no further than that, so a long word full of keys ("tokentoken...") is
// not rescanned from each of them.
func skipKey(s string, at int) (end int, ok bool) {
	for i := at; i < len(s) && i-at <= longestKey; i++ {
		if c := s[i]; !isLetter(c) && c != '_' && c != '-' && c < 0x80 {
			return i, true
		}
	}
	return len(s), len(s)-at <= longestKey
}

// skipBlanks returns the end of the run of spaces and tabs at s[i].
func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isURLSpace reports whether c is white space as \s in a regexp means it.
func isURLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// PEM blocks: a header, a body, and the first footer after the header. An
// unterminated block (a cut transcript) is masked up to the end of its body.
var (
	pemHeader = anchored(`-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----`)
	pemFooter = anchored(`-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----`)
	pemBody   = anchored(`[A-Za-z0-9+/=\s:,.\-]*`)
)

// scanPEM appends every private key block of s. Footers are located once up
// front, so text full of headers without footers stays linear.
func scanPEM(found []candidate, s string) []candidate {
	if !strings.Contains(s, pemStart) {
		return found
	}
	var footerStarts, footerEnds []int
	for i := 0; ; {
		j := strings.Index(s[i:], "-----END")
		if j < 0 {
			break
		}
		if f := pemFooter.FindStringIndex(s[i+j:]); f != nil {
			footerStarts = append(footerStarts, i+j)
			footerEnds = append(footerEnds, i+j+f[1])
		}
		i += j + 1
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], pemStart)
		if i < 0 {
			break
		}
		start := from + i
		from = start + 1
		h := pemHeader.FindStringIndex(s[start:])
		if h == nil {
			continue
		}
		end := start + h[1]
		if k := sort.SearchInts(footerStarts, end); k < len(footerStarts) {
			end = footerEnds[k]
		} else {
			end += pemBody.FindStringIndex(s[end:])[1]
		}
		found = append(found, candidate{Match{ClassPrivateKey, start, end}, -1})
		from = end
	}
	return found
}

func anchored(expr string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + expr + `)`) }

// marker matches a redaction marker already in the text, so a second pass
// leaves it alone and String stays idempotent.
var marker = regexp.MustCompile(`\[REDACTED:[a-z_]{1,40}\]`)

// acceptAssignment keeps key=value pairs whose value looks like a credential
// and drops prose ("the token: it expires") and placeholders (${DB_PASSWORD}).
// loc is the full submatch index; group 1 is the key, group 2 the operator.
func acceptAssignment(s string, loc, value []int) bool {
	v := withoutMarkers(s[value[0]:value[1]])
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "<") || strings.HasPrefix(v, "{{") || strings.Trim(v, "*xX.") == "" {
		return false
	}
	key := strings.ToLower(s[loc[2]:loc[3]])
	if key == "pwd" && strings.HasPrefix(v, "/") {
		return false // PWD=/home/user in an environment dump is a directory
	}
	strong := strings.HasPrefix(key, "pass") || key == "pwd"
	quoted := value[0] > 0 && (s[value[0]-1] == '"' || s[value[0]-1] == '\'')
	colon := s[loc[4]:loc[5]] == ":"
	n := utf8.RuneCountInString(v)
	switch {
	case strong:
		return n >= 3
	case quoted || !colon:
		return n >= 6
	default:
		// "token: <value>" in prose is common; require something key-like.
		return n >= 8 && strings.ContainsAny(v, "0123456789")
	}
}

// withoutMarkers returns v without the redaction markers in it. A value is
// judged by what is left of it: the characters of a marker ('_', ':', the
// brackets) would otherwise make "[REDACTED:aws_access_key]-x", the output
// of a first pass, look like a password to the second.
func withoutMarkers(v string) string {
	spans := markerSpans(v)
	if len(spans) == 0 {
		return v
	}
	var b strings.Builder
	prev := 0
	for _, m := range spans {
		b.WriteString(v[prev:m[0]])
		prev = m[1]
	}
	b.WriteString(v[prev:])
	return b.String()
}

// acceptSpokenPassword keeps "password is <value>" only when the value looks
// like a password rather than prose ("the password is required"): it holds a
// digit or a symbol and is at least 4 characters long.
func acceptSpokenPassword(s string, _, value []int) bool {
	v := strings.TrimRight(withoutMarkers(s[value[0]:value[1]]), ".:")
	return utf8.RuneCountInString(v) >= 4 && strings.ContainsAny(v, "0123456789!@#$%^&*_+=~?")
}

// Find returns the secrets in s as non-overlapping byte ranges in order.
// Overlapping detections are merged into one range that keeps the class of the
// one starting first, so every byte any detector flags is covered. Existing
// [REDACTED:<class>] markers are never reported.
//
// In a text without "-----BEGIN" (no private key block, the one construct
// whose body may run over many lines), what Find finds in each line depends
// on that line alone: Find finds in the line just what it finds in the line
// on its own, and the same again in the line with spaces put before it or a
// carriage return taken from its end. Callers that reshape redacted text
// line by line rely on this to redact again only what they changed.
func Find(s string) []Match {
	found := scanPEM(nil, s)
	found = scanAnchors(found, s)
	if len(found) == 0 {
		return nil
	}
	return merge(dropMarkers(found, markerSpans(s)))
}

// markerPrefix begins every redaction marker.
const markerPrefix = "[REDACTED:"

// markerSpans returns what marker.FindAllStringIndex(s, -1) returns, the
// spans of the markers in s, without running the regexp over all of s.
func markerSpans(s string) [][]int {
	var spans [][]int
	for from := 0; ; {
		i := strings.Index(s[from:], markerPrefix)
		if i < 0 {
			return spans
		}
		start := from + i
		end := markerEnd(s, start)
		if end < 0 {
			from = start + 1
			continue
		}
		spans = append(spans, []int{start, end})
		from = end
	}
}

// markerEnd returns the end of the marker at s[start:], which begins with
// markerPrefix, or -1 when there is none: 1 to 40 of [a-z_] and a ']'.
func markerEnd(s string, start int) int {
	j := start + len(markerPrefix)
	class := j
	for j < len(s) && j-class < 40 && (s[j] >= 'a' && s[j] <= 'z' || s[j] == '_') {
		j++
	}
	if j == class || j == len(s) || s[j] != ']' {
		return -1
	}
	return j + 1
}

// candidate is a detection before overlaps are merged.
type candidate struct {
	Match
	priority int
}

// anchorAt is one anchor of one detector (its index in detectors).
type anchorAt struct {
	text     string
	detector int
}

// anchorIndex is the anchorTable of detectors.
var anchorIndex = func() (x anchorTable) {
	for di, d := range detectors {
		for _, a := range d.anchors {
			k := uint8(len(x.anchors))
			x.anchors = append(x.anchors, anchorAt{a, di})
			for _, c0 := range cases(a[0], d.fold) {
				x.byFirst[c0] = append(x.byFirst[c0], k)
				for _, c1 := range cases(a[1], d.fold) {
					pair := uint(c0)<<8 | uint(c1)
					x.bigrams[pair/64] |= 1 << (pair % 64)
					x.inPair[c0], x.inPair[c1] = true, true
				}
			}
		}
	}
	if len(x.anchors) > maxAnchors {
		panic("redact: more anchors than maxAnchors")
	}
	return x
}()

// anchorTable lists every detector's anchors, and for each byte the anchors
// that may start with it (both cases of a folding anchor's first letter),
// so one pass over a text finds every anchor. bigrams has bit b0<<8|b1 set
// for the first two bytes of every anchor in every case it matches in: most
// bytes of prose are skipped after that one test. inPair is set for every
// byte of those pairs: a byte outside them can neither end a pair nor begin
// one, so the pass steps over it and the byte before it at once.
type anchorTable struct {
	anchors []anchorAt
	byFirst [256][]uint8
	bigrams [1 << 16 / 64]uint64
	inPair  [256]bool
}

// pairAt reports whether s[i] and s[i+1] are the first two bytes of an
// anchor, in a case it is searched in.
func (x *anchorTable) pairAt(s string, i int) bool {
	pair := uint(s[i])<<8 | uint(s[i+1])
	return x.bigrams[pair/64]&(1<<(pair%64)) != 0
}

// nextPair returns the first offset from i on where the first two bytes of
// an anchor occur, or -1.
func (x *anchorTable) nextPair(s string, i int) int {
	for i+1 < len(s) {
		if !x.inPair[s[i+1]] {
			i += 2
			continue
		}
		if x.pairAt(s, i) {
			return i
		}
		i++
	}
	return -1
}

// cases returns c, and its upper-case form too when fold is set and c is a
// lower-case ASCII letter.
func cases(c byte, fold bool) []byte {
	if fold && c >= 'a' && c <= 'z' {
		return []byte{c, c - 'a' + 'A'}
	}
	return []byte{c}
}

// maxAnchors bounds len(anchorIndex.anchors), so scanAnchors keeps its state
// on the stack.
const maxAnchors = 32

// scanAnchors runs every detector at every occurrence of its anchors in s
// and appends the accepted matches. An occurrence inside an earlier match
// of the same anchor is skipped, so a long secret is not rescanned from
// each of its own anchors.
func scanAnchors(found []candidate, s string) []candidate {
	var next [maxAnchors]int // per anchor: the first offset it may be tried at
	x := &anchorIndex
	for i := x.nextPair(s, 0); i >= 0; i = x.nextPair(s, i+1) {
		for _, k := range x.byFirst[s[i]] {
			a := x.anchors[k]
			d := &detectors[a.detector]
			if i < next[k] || !hasAnchor(s[i:], a.text, d.fold) || d.mayMatch != nil && !d.mayMatch(s, i) {
				continue
			}
			var end int
			found, end = d.matchAt(found, s[:lineEnd(s, i)], i, a.detector)
			next[k] = max(i+1, end)
		}
	}
	return found
}

// lineEnd returns the offset of the first line feed from i on, or len(s).
// A detector's match ends before it (see Find), so its regexp is given no
// more: how long a regexp takes to fail can grow with the text it is given.
func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// hasAnchor reports whether s starts with anchor, ignoring ASCII case when
// fold is set (anchor is then lower-case).
func hasAnchor(s, anchor string, fold bool) bool {
	if len(s) < len(anchor) {
		return false
	}
	if !fold {
		return s[:len(anchor)] == anchor
	}
	for j := 0; j < len(anchor); j++ {
		c := s[j]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != anchor[j] {
			return false
		}
	}
	return true
}

// matchAt runs d, the detector of that priority, at its anchor found at
// offset at of s and appends the match if d accepts it. end is where the
// match ends, or 0 for none.
func (d *detector) matchAt(found []candidate, s string, at, priority int) ([]candidate, int) {
	start := at
	if d.scheme {
		start = schemeStart(s, at)
	}
	if d.word && start > 0 && isWordByte(s[start-1]) {
		return found, 0
	}
	loc := d.re.FindStringSubmatchIndex(s[start:])
	if loc == nil {
		return found, 0
	}
	for k := range loc {
		if loc[k] >= 0 {
			loc[k] += start
		}
	}
	span := []int{loc[0], loc[1]}
	for _, g := range valueGroups[priority] {
		if loc[2*g] >= 0 {
			span = []int{loc[2*g], loc[2*g+1]}
		}
	}
	if d.accept != nil && !d.accept(s, loc, span) {
		return found, 0
	}
	return append(found, candidate{Match{d.class, span[0], span[1]}, priority}), loc[1]
}

// valueGroups holds, per detector, the indexes of its groups named "v" (the
// masked part; alternatives may each have one), in order.
var valueGroups = func() [][]int {
	gs := make([][]int, len(detectors))
	for i, d := range detectors {
		for g, name := range d.re.SubexpNames() {
			if name == "v" {
				gs[i] = append(gs[i], g)
			}
		}
	}
	return gs
}()

// schemeStart returns where the URL scheme before "://" at i begins: the
// longest run of up to 21 scheme bytes that starts with a letter.
func schemeStart(s string, i int) int {
	start := i
	for j := i - 1; j >= 0 && i-j <= 21; j-- {
		c := s[j]
		if !isLetter(c) && (c < '0' || c > '9') && c != '+' && c != '.' && c != '-' {
			break
		}
		if isLetter(c) {
			start = j
		}
	}
	return start
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isWordByte(c byte) bool { return isLetter(c) || c >= '0' && c <= '9' || c == '_' }

// dropMarkers removes detections that lie entirely inside an existing marker
// (such as the value of "password=[REDACTED:jwt]").
func dropMarkers(found []candidate, markers [][]int) []candidate {
	if len(markers) == 0 {
		return found
	}
	kept := found[:0]
	for _, c := range found {
		inside := false
		for _, m := range markers {
			if c.Start >= m[0] && c.End <= m[1] {
				inside = true
				break
			}
		}
		if !inside {
			kept = append(kept, c)
		}
	}
	return kept
}

func merge(found []candidate) []Match {
	if len(found) == 0 {
		return nil
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End
		}
		return a.priority < b.priority
	})
	out := []Match{found[0].Match}
	for _, c := range found[1:] {
		last := &out[len(out)-1]
		if c.Start < last.End {
			last.End = max(last.End, c.End)
			continue
		}
		out = append(out, c.Match)
	}
	return out
}

// String returns s with every secret replaced by [REDACTED:<class>] and the
// classes it replaced, de-duplicated in first-seen order. It is idempotent:
// String of its own output returns that output unchanged.
func String(s string) (redacted string, classes []string) {
	matches := Find(s)
	if len(matches) == 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, m := range matches {
		b.WriteString(s[prev:m.Start])
		b.WriteString("[REDACTED:" + m.Class + "]")
		prev = m.End
		if !containsString(classes, m.Class) {
			classes = append(classes, m.Class)
		}
	}
	b.WriteString(s[prev:])
	return b.String(), classes
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Contains reports whether s holds at least one secret.
func Contains(s string) bool { return len(Find(s)) > 0 }

// Only reports whether s holds at least one secret and nothing else but
// whitespace, punctuation and symbols: after redaction no letter or digit
// outside the markers is left. Harvest drops such a fact.
func Only(s string) bool {
	red, classes := String(s)
	if len(classes) == 0 {
		return false
	}
	rest := marker.ReplaceAllString(red, "")
	return strings.IndexFunc(rest, func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}) < 0
}
