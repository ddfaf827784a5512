// Package calc is the "calculator" tool: it evaluates an arithmetic expression the agent
// writes and answers with a decimal number.
//
// The grammar, lowest precedence first (a recursive-descent parser, one function a rule):
//
//	expr    = term { ("+" | "-") term }          left-associative
//	term    = unary { ("*" | "/" | "%") unary }   left-associative; % is the remainder (math.Mod)
//	unary   = "-" unary | power                   so -2^2 = -(2^2) = -4, as in mathematics
//	power   = primary [ "^" unary ]               right-associative: 2^3^2 = 2^9
//	primary = number | "(" expr ")"
//	number  = digits [ "." digits ] | "." digits  no exponent, sign or thousands separator
//
// Spaces, tabs and newlines between tokens are ignored. Arithmetic is float64; the answer is
// rounded by Format's fixed rule. Every bad input (a syntax error, division by zero, a result
// out of range, an expression over a limit) is an error whose text tells the agent what to fix.
package calc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of one evaluation. They bound what an agent's text can cost: Length bounds the bytes
// read, Depth the parser's recursion, Operations the arithmetic done, and MaxMagnitude keeps
// every number exact to the unit (float64 holds every integer up to 2^53 ≈ 9.0e15) and its
// decimal form short.
const (
	MaxLength     = 200  // bytes of the expression
	MaxDepth      = 20   // nested parentheses and unary minuses
	MaxOperations = 50   // binary operators and unary minuses
	MaxMagnitude  = 1e15 // largest |value| of a number written or computed
	Decimals      = 6    // decimal places Format keeps
)

// Eval evaluates expr by the package's grammar. The error, when there is one, is the message
// the agent reads: it names the problem and, for a syntax error, the byte offset where it is.
func Eval(expr string) (float64, error) {
	if strings.TrimSpace(expr) == "" {
		return 0, errors.New("empty expression; write one such as (3 + 4) * 2")
	}
	if len(expr) > MaxLength {
		return 0, fmt.Errorf("expression of %d bytes, at most %d", len(expr), MaxLength)
	}
	p := &parser{src: expr}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return 0, p.errorf("unexpected %q", p.char())
	}
	return v, nil
}

// Format renders x as the calculator's answer: rounded to Decimals places (strconv's correct
// rounding of the binary value, ties to even), trailing zeros and a trailing point removed,
// never an exponent, and "0" for negative zero. So 0.1+0.2 is "0.3", 7/2 "3.5", 1/3 "0.333333",
// 2^40 "1099511627776".
func Format(x float64) string {
	s := strconv.FormatFloat(x, 'f', Decimals, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// parser holds the position in the expression and the budgets spent so far.
type parser struct {
	src   string
	pos   int
	depth int // open parentheses and unary minuses around the current rule
	ops   int // operators applied
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
}

// char returns the character at pos, whole: an agent that wrote "3 × 4" or "−2" reads back
// the sign it wrote, not the first byte of its UTF-8 encoding shown as a Latin-1 letter.
func (p *parser) char() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}

// peek returns the next non-space byte, or 0 at the end.
func (p *parser) peek() byte {
	p.skipSpace()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// expr = term { ("+" | "-") term }
func (p *parser) expr() (float64, error) {
	x, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			return x, nil
		}
		p.pos++
		var y float64
		if y, err = p.term(); err == nil {
			x, err = p.apply(op, x, y)
		}
	}
	return 0, err
}

// term = unary { ("*" | "/" | "%") unary }
func (p *parser) term() (float64, error) {
	x, err := p.unary()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' {
			return x, nil
		}
		p.pos++
		var y float64
		if y, err = p.unary(); err == nil {
			x, err = p.apply(op, x, y)
		}
	}
	return 0, err
}

// unary = "-" unary | power
func (p *parser) unary() (float64, error) {
	if p.peek() != '-' {
		return p.power()
	}
	p.pos++
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer p.leave()
	if err := p.count(); err != nil {
		return 0, err
	}
	x, err := p.unary()
	return -x, err
}

// power = primary [ "^" unary ]
func (p *parser) power() (float64, error) {
	x, err := p.primary()
	if err != nil || p.peek() != '^' {
		return x, err
	}
	p.pos++
	y, err := p.unary()
	if err != nil {
		return 0, err
	}
	return p.apply('^', x, y)
}

// primary = number | "(" expr ")"
func (p *parser) primary() (float64, error) {
	switch c := p.peek(); {
	case c == '(':
		p.pos++
		if err := p.enter(); err != nil {
			return 0, err
		}
		defer p.leave()
		x, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, p.errorf("missing )")
		}
		p.pos++
		return x, nil
	case c == '.' || isDigit(c):
		return p.number()
	case c == 0:
		return 0, p.errorf("expression ends where a number or ( was expected")
	default:
		return 0, p.errorf("unexpected %q where a number or ( was expected", p.char())
	}
}

// number = digits [ "." digits ] | "." digits
func (p *parser) number() (float64, error) {
	start := p.pos
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		frac := p.pos
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
		if p.pos == frac {
			p.pos = start
			return 0, p.errorf("number %q needs digits after the point", p.src[start:frac])
		}
	}
	text := p.src[start:p.pos]
	x, err := strconv.ParseFloat(text, 64)
	if err != nil || x > MaxMagnitude {
		p.pos = start
		return 0, p.errorf("number %s is larger than %g", text, MaxMagnitude)
	}
	return x, nil
}

// apply computes x op y and checks the result: a remainder or division by zero, a result that
// is not a real number (a negative number to a fractional power) or over MaxMagnitude is an
// error.
func (p *parser) apply(op byte, x, y float64) (float64, error) {
	if err := p.count(); err != nil {
		return 0, err
	}
	var z float64
	switch op {
	case '+':
		z = x + y
	case '-':
		z = x - y
	case '*':
		z = x * y
	case '/':
		if y == 0 {
			return 0, errors.New("division by zero")
		}
		z = x / y
	case '%':
		if y == 0 {
			return 0, errors.New("remainder of a division by zero")
		}
		z = math.Mod(x, y)
	case '^':
		if x == 0 && y < 0 {
			return 0, errors.New("zero to a negative power (a division by zero)")
		}
		z = math.Pow(x, y)
		if math.IsNaN(z) {
			// The base in parentheses: by the grammar -8^0.5 is -(8^0.5), a real number.
			return 0, fmt.Errorf("(%s)^%s is not a real number", Format(x), Format(y))
		}
	}
	if math.Abs(z) > MaxMagnitude || math.IsNaN(z) {
		return 0, fmt.Errorf("result of %s %c %s is larger than %g", Format(x), op, Format(y), MaxMagnitude)
	}
	return z, nil
}

// count spends one operation of the MaxOperations budget.
func (p *parser) count() error {
	p.ops++
	if p.ops > MaxOperations {
		return fmt.Errorf("more than %d operations", MaxOperations)
	}
	return nil
}

// enter opens one level of nesting, refusing more than MaxDepth; leave closes it.
func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.errorf("nested more than %d levels deep", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
