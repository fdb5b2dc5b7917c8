package gate

import "sync"

// feedChunk bounds how much input Tail.Write sanitizes at once, and so the
// size of its scratch buffer, however large a single write is.
const feedChunk = 4096

// Tail is an io.Writer that sanitizes what it is given as it arrives and
// keeps only the last budget bytes of the sanitized text, in a ring buffer
// allocated once. Its memory is bounded however much is written, and it
// counts everything. Because it sanitizes the whole stream in order, an
// escape sequence or a multi-byte character that straddles the point where
// old text is dropped is handled as if nothing had been dropped: the kept
// tail is exactly the end of Sanitize(everything written).
//
// Use one Tail per stream (stdout, stderr) and pass them to ShapeTails. A
// Tail is safe for concurrent use; Write never fails.
type Tail struct {
	mu      sync.Mutex
	san     sanitizer
	ring    []byte
	w       int   // next write position in ring
	n       int64 // sanitized bytes produced so far
	raw     int64 // bytes written
	scratch []byte
}

// NewTail returns a Tail keeping the last budget bytes of sanitized text;
// budget <= 0 means OutputBudget. ShapeTails needs tails of at least
// OutputBudget to fill the output.
func NewTail(budget int) *Tail {
	if budget <= 0 {
		budget = OutputBudget
	}
	return &Tail{ring: make([]byte, budget), scratch: make([]byte, 0, 3*feedChunk+3)}
}

// Write sanitizes p into the tail. It always returns len(p), nil.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.raw += int64(n)
	for len(p) > 0 {
		chunk := p[:min(len(p), feedChunk)]
		p = p[len(chunk):]
		t.scratch = t.san.feed(t.scratch[:0], chunk)
		t.put(t.scratch)
	}
	return n, nil
}

// Total returns the number of bytes written so far.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.raw
}

// put appends sanitized bytes to the ring.
func (t *Tail) put(b []byte) {
	t.n += int64(len(b))
	c := len(t.ring)
	if len(b) >= c {
		copy(t.ring, b[len(b)-c:])
		t.w = 0
		return
	}
	k := copy(t.ring[t.w:], b)
	if k < len(b) {
		t.w = copy(t.ring, b[k:])
	} else if t.w += k; t.w == c {
		t.w = 0
	}
}

// snapshot returns the kept sanitized text as if the stream ended now
// (without ending it), the length of the whole sanitized stream, and whether
// its start was dropped. The kept text is valid UTF-8: a character cut by the
// ring's edge is left out.
func (t *Tail) snapshot() (kept []byte, total int64, dropped bool) {
	if t == nil {
		return nil, 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := int64(len(t.ring))
	if t.n <= c {
		kept = append(kept, t.ring[:t.n]...)
	} else {
		kept = append(kept, t.ring[t.w:]...)
		kept = append(kept, t.ring[:t.w]...)
		dropped = true
		for len(kept) > 0 && !isRuneStart(kept[0]) {
			kept = kept[1:]
		}
	}
	end := t.san // a copy: finishing it leaves the stream open
	before := len(kept)
	kept = end.finish(kept)
	return kept, t.n + int64(len(kept)-before), dropped
}
