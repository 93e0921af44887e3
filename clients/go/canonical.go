package routeplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical is the RFC 8785 (JSON Canonicalization Scheme) form of the JSON text data
// (docs/routing-spec.md §2): members sorted by UTF-16 code units, JCS string escapes, numbers
// as ECMAScript writes doubles. A member name given twice keeps its last value, as Python's json
// does. Members of the top-level object named in skip are left out (the checksum).
func Canonical(data []byte, skip ...string) ([]byte, error) {
	out, _, err := canonicalize(data, false, skip)
	return out, err
}

// legacyCanonical is the spelling of documents published before JCS: Python's
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) of json.loads(data).
func legacyCanonical(data []byte, skip ...string) ([]byte, error) {
	out, _, err := canonicalize(data, true, skip)
	return out, err
}

// MaxDepth is how deeply arrays and objects may nest in a document.
const MaxDepth = 64

// captured is what a canonicalisation picks up on the way: the top-level checksum and the
// key_group_worker array as indices into its distinct names (nil when it holds escapes).
type captured struct {
	checksum   *string
	groupNames []string
	groups     []int32
	groupsOK   bool
}

func canonicalize(data []byte, legacy bool, skip []string) ([]byte, *captured, error) {
	p := &canonParser{data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), legacy: legacy}
	var out bytes.Buffer
	out.Grow(len(data))
	p.ws()
	if err := p.value(&out, skip); err != nil {
		return nil, nil, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return nil, nil, p.fail("data after the JSON value")
	}
	return out.Bytes(), &p.got, nil
}

type canonParser struct {
	data       []byte
	pos        int
	depth      int
	legacy     bool
	got        captured
	collecting bool // in the top-level key_group_worker
	intern     map[string]int32
}

func (p *canonParser) fail(what string) error {
	return fmt.Errorf("not JSON: %s at byte %d", what, p.pos)
}

func (p *canonParser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value(out *bytes.Buffer, skip []string) error {
	if p.pos >= len(p.data) {
		return p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(out, skip)
	case c == '[':
		return p.array(out)
	case c == '"':
		if raw, ok := p.plainString(); ok { // no escapes: its bytes are its JCS form
			if p.collecting && p.depth == 2 {
				i, seen := p.intern[string(raw)] // no allocation for a known name
				if !seen {
					i = int32(len(p.got.groupNames))
					p.intern[string(raw)] = i
					p.got.groupNames = append(p.got.groupNames, string(raw))
				}
				p.got.groups = append(p.got.groups, i)
			}
			out.WriteByte('"')
			out.Write(raw)
			out.WriteByte('"')
			return nil
		}
		s, err := p.str()
		if err != nil {
			return err
		}
		if p.collecting {
			p.got.groupsOK = false // an escaped name: the caller decodes the array itself
		}
		writeString(out, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				out.WriteString(lit)
				return nil
			}
		}
		return p.fail("unexpected character")
	}
}

type member struct {
	name  string
	order []uint16 // UTF-16 code units (JCS), or nil: the UTF-8 bytes (code points)
	value []byte
}

func (p *canonParser) object(out *bytes.Buffer, skip []string) error {
	if p.depth++; p.depth > MaxDepth {
		return fmt.Errorf("JSON nested deeper than %d levels", MaxDepth)
	}
	p.pos++
	var members []member
	index := map[string]int{}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return p.fail("expected a member name")
			}
			name, err := p.str()
			if err != nil {
				return err
			}
			p.ws()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return p.fail("expected ':'")
			}
			p.pos++
			p.ws()
			var value bytes.Buffer
			top := p.depth == 1
			if top && name == "key_group_worker" && p.pos < len(p.data) && p.data[p.pos] == '[' {
				p.collecting, p.intern = true, map[string]int32{}
				p.got.groupNames, p.got.groups, p.got.groupsOK = nil, nil, true
			}
			start := p.pos
			err = p.value(&value, nil)
			p.collecting = false
			if err != nil {
				return err
			}
			if top && name == "checksum" {
				p.got.checksum = nil
				var text string
				if p.data[start] == '"' && json.Unmarshal(value.Bytes(), &text) == nil {
					p.got.checksum = &text
				}
			}
			if !slices.Contains(skip, name) {
				m := member{name: name, value: value.Bytes()}
				if !p.legacy {
					m.order = utf16.Encode([]rune(name))
				}
				if i, seen := index[name]; seen {
					members[i] = m // the last value counts
				} else {
					index[name] = len(members)
					members = append(members, m)
				}
			}
			p.ws()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				p.pos++
				break
			}
			return p.fail("expected ',' or '}'")
		}
	}
	slices.SortFunc(members, func(a, b member) int {
		if a.order != nil {
			return slices.Compare(a.order, b.order)
		}
		return strings.Compare(a.name, b.name)
	})
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		writeString(out, m.name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	p.depth--
	return nil
}

func (p *canonParser) array(out *bytes.Buffer) error {
	if p.depth++; p.depth > MaxDepth {
		return fmt.Errorf("JSON nested deeper than %d levels", MaxDepth)
	}
	p.pos++
	out.WriteByte('[')
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
	} else {
		for first := true; ; first = false {
			if !first {
				out.WriteByte(',')
			}
			p.ws()
			if p.collecting && p.depth == 2 && (p.pos >= len(p.data) || p.data[p.pos] != '"') {
				p.got.groupsOK = false
			}
			if err := p.value(out, nil); err != nil {
				return err
			}
			p.ws()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.pos++
				break
			}
			return p.fail("expected ',' or ']'")
		}
	}
	out.WriteByte(']')
	p.depth--
	return nil
}

// plainString reads the string at p.pos when it has no escapes and no controls (valid UTF-8).
func (p *canonParser) plainString() ([]byte, bool) {
	for i := p.pos + 1; i < len(p.data); i++ {
		c := p.data[i]
		if c == '"' {
			raw := p.data[p.pos+1 : i]
			if !utf8.Valid(raw) {
				return nil, false
			}
			p.pos = i + 1
			return raw, true
		}
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	return nil, false
}

// str reads a JSON string at p.pos; lone surrogates, raw controls and invalid UTF-8 are errors.
func (p *canonParser) str() (string, error) {
	p.pos++
	start := p.pos
	for p.pos < len(p.data) { // the common case: no escapes
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				return "", p.fail("invalid UTF-8")
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.ValidString(b.String()) {
				return "", p.fail("invalid UTF-8")
			}
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("a control character in a string")
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.fail("unexpected end")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 || !bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
						return "", p.fail("a lone surrogate")
					}
					p.pos += 2
					low, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r = utf16.DecodeRune(r, low); r == utf8.RuneError {
						return "", p.fail("a lone surrogate")
					}
				}
				b.WriteRune(r)
			default:
				return "", p.fail("an invalid escape")
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.fail("unterminated string")
}

func (p *canonParser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.fail("unexpected end")
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.fail("an invalid \\u escape")
	}
	p.pos += 4
	return rune(v), nil
}

func (p *canonParser) number(out *bytes.Buffer) error {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.fail("a malformed number")
	}
	integer := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		integer = false
		if digits() == 0 {
			return p.fail("a malformed number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		integer = false
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("a malformed number")
		}
	}
	token := string(p.data[start:p.pos])
	if p.legacy && integer { // Python's int: its exact digits
		var n big.Int
		n.SetString(token, 10)
		out.WriteString(n.String())
		return nil
	}
	x, err := strconv.ParseFloat(token, 64)
	if err != nil {
		return fmt.Errorf("%s is not a finite double", token)
	}
	if p.legacy {
		out.WriteString(pythonRepr(x))
	} else {
		out.WriteString(NumberText(x))
	}
	return nil
}

// shortest gives the shortest decimal digits that read back as x (x > 0), and n with
// x = 0.digits × 10^n.
func shortest(x float64) (string, int) {
	s := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX
	mantissa, exponent, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exponent)
	return strings.Replace(mantissa, ".", "", 1), e + 1
}

// NumberText is ECMAScript's Number.prototype.toString of x (RFC 8785 §3.2.2.3).
func NumberText(x float64) string {
	if x == 0 {
		return "0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	s, n := shortest(x)
	k := len(s)
	switch {
	case k <= n && n <= 21:
		return sign + s + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + s[:n] + "." + s[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + s
	}
	mantissa := s[:1]
	if k > 1 {
		mantissa += "." + s[1:]
	}
	e := n - 1
	if e >= 0 {
		return sign + mantissa + "e+" + strconv.Itoa(e)
	}
	return sign + mantissa + "e-" + strconv.Itoa(-e)
}

// pythonRepr is Python's repr of the double x: shortest digits, fixed for -4 < n <= 16.
func pythonRepr(x float64) string {
	sign := ""
	if math.Signbit(x) {
		sign, x = "-", -x
	}
	if x == 0 {
		return sign + "0.0"
	}
	s, n := shortest(x)
	k := len(s)
	if -4 < n && n <= 16 {
		switch {
		case n <= 0:
			return sign + "0." + strings.Repeat("0", -n) + s
		case n < k:
			return sign + s[:n] + "." + s[n:]
		default:
			return sign + s + strings.Repeat("0", n-k) + ".0"
		}
	}
	mantissa := s[:1]
	if k > 1 {
		mantissa += "." + s[1:]
	}
	e := n - 1
	esign := "+"
	if e < 0 {
		esign, e = "-", -e
	}
	return fmt.Sprintf("%s%se%s%02d", sign, mantissa, esign, e)
}

// writeString writes s as JCS (and Python's ensure_ascii=False) escapes it.
func writeString(out *bytes.Buffer, s string) {
	out.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out.WriteString(s[start:i])
		switch c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			fmt.Fprintf(out, `\u%04x`, c)
		}
		start = i + 1
	}
	out.WriteString(s[start:])
	out.WriteByte('"')
}

var errNoChecksum = errors.New("the document has no checksum")
