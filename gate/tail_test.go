package gate

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

func TestTailRing(t *testing.T) {
	for _, budget := range []int{1, 2, 3, 7, 16} {
		tail := NewTail(budget)
		var all []byte
		rng := rand.New(rand.NewPCG(1, uint64(budget)))
		for i := 0; i < 200; i++ {
			chunk := make([]byte, rng.IntN(3*budget+2))
			for j := range chunk {
				chunk[j] = 'a' + byte(rng.IntN(26))
			}
			tail.Write(chunk)
			all = append(all, chunk...)
			kept, total, dropped := tail.snapshot()
			if total != int64(len(all)) || dropped != (len(all) > budget) {
				t.Fatalf("budget %d: total %d dropped %v after %d bytes", budget, total, dropped, len(all))
			}
			if want := all[max(0, len(all)-budget):]; !bytes.Equal(kept, want) {
				t.Fatalf("budget %d: kept %q, want %q", budget, kept, want)
			}
		}
		if tail.Total() != int64(len(all)) {
			t.Fatalf("Total = %d, want %d", tail.Total(), len(all))
		}
	}
}

// TestTailStateAcrossDrop: the sanitizer runs over the whole stream, so an
// escape sequence whose start was dropped long ago is still known as one. A
// tail of raw bytes would show the OSC payload here.
func TestTailStateAcrossDrop(t *testing.T) {
	tail := NewTail(0)
	tail.Write(bytes.Repeat([]byte("x"), 1<<20))
	tail.Write([]byte("\x1b]0;"))
	for i := 0; i < 100; i++ {
		tail.Write(bytes.Repeat([]byte("secret "), 1000))
	}
	tail.Write([]byte("\x07end\n"))
	out, truncated := ShapeTails(tail, nil)
	if !truncated || strings.Contains(out, "secret") || !strings.HasSuffix(out, "xxx"+"end\n") {
		t.Fatalf("ShapeTails = %.60q...%q, %v", out, out[max(0, len(out)-20):], truncated)
	}
	// A multi-byte character cut by the ring's edge is left out whole.
	for shift := 0; shift < 4; shift++ {
		tail := NewTail(0)
		tail.Write(bytes.Repeat([]byte("x"), shift))
		tail.Write(bytes.Repeat([]byte("🙂"), OutputBudget)) // 4x the ring
		kept, _, dropped := tail.snapshot()
		if !dropped || !strings.HasPrefix(string(kept), "🙂") || len(kept) < OutputBudget-3 {
			t.Fatalf("shift %d: kept starts %q (%d bytes)", shift, kept[:8], len(kept))
		}
		out, _ := ShapeTails(tail, nil)
		checkShape(t, out, true, strings.Repeat("x", shift)+strings.Repeat("🙂", OutputBudget))
	}
}

// TestTailChunkingInvariant: however the stream is cut into writes, the
// result is the same as shaping it whole.
func TestTailChunkingInvariant(t *testing.T) {
	pieces := []string{"a", "\r", "\n", "\x1b", "[", "3", "1", "m", "\x1b]0;t", "\x07", "\xe2", "\x82", "\xac",
		"🙂", "\xff", "\x00", "\u202e", "\x1bP", "\x1b\\", "é", "\t", "\xf0\x9f", "\x99\x82", "\x9b", "xyz"}
	rng := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 300; round++ {
		var in []byte
		for n := rng.IntN(8000); len(in) < n; {
			in = append(in, pieces[rng.IntN(len(pieces))]...)
		}
		want, wantTr := Shape(in, in[:len(in)/2])
		o, e := NewTail(0), NewTail(0)
		for rest := in; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(50))
			o.Write(rest[:n])
			rest = rest[n:]
		}
		e.Write(in[:len(in)/2])
		got, gotTr := ShapeTails(o, e)
		if got != want || gotTr != wantTr {
			t.Fatalf("round %d: chunked result differs", round)
		}
		checkShape(t, got, gotTr, Sanitize(in)+Sanitize(in[:len(in)/2]))
	}
}

func TestTailWriteDoesNotAllocate(t *testing.T) {
	tail := NewTail(0)
	chunk := mixedChunk(64 << 10)
	if n := testing.AllocsPerRun(100, func() { tail.Write(chunk) }); n != 0 {
		t.Fatalf("Write allocates %v times per call", n)
	}
}

// mixedChunk is output of every kind: text, colors, progress lines,
// multi-byte characters, controls, invalid bytes.
func mixedChunk(size int) []byte {
	unit := []byte("plain text line with some words in it, and more words\n" +
		"\x1b[1;32mOK\x1b[0m héllo 世界 🙂 50%\r100%\r\n\ttab\x00\xff\u202e\x1b]0;title\x07\n")
	var b []byte
	for len(b) < size {
		b = append(b, unit...)
	}
	return b[:size]
}

// TestTailGigabyteBoundedMemory writes 1 GiB through a Tail and checks that
// memory does not grow with it.
func TestTailGigabyteBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GiB; skipped with -short")
	}
	const total = 1 << 30
	chunk := mixedChunk(1 << 20)
	tail := NewTail(0)
	tail.Write(chunk) // warm up

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for written := 0; written < total; written += len(chunk) {
		tail.Write(chunk)
	}
	runtime.ReadMemStats(&after)

	if got := tail.Total(); got != total+int64(len(chunk)) {
		t.Fatalf("Total = %d", got)
	}
	// Nothing is allocated per byte: the ring and scratch buffer are made once.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("writing 1 GiB allocated %d bytes", grew)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("heap grew by %d bytes", grew)
	}
	out, truncated := ShapeTails(tail, nil)
	if !truncated || len(out) > OutputBudget {
		t.Fatalf("ShapeTails = %d bytes, truncated %v", len(out), truncated)
	}
	checkClean(t, out)
	// The tail is the end of the stream, exactly.
	if want, _ := Shape(bytes.Repeat(chunk, 2), nil); out != want {
		t.Errorf("the tail of 1 GiB differs from the tail of its last chunks")
	}
}

func BenchmarkTailWriteASCII(b *testing.B) {
	chunk := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 1<<14)
	tail := NewTail(0)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		tail.Write(chunk)
	}
}

func BenchmarkTailWriteMixed(b *testing.B) {
	chunk := mixedChunk(1 << 20)
	tail := NewTail(0)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		tail.Write(chunk)
	}
}

func BenchmarkShape(b *testing.B) {
	stdout, stderr := mixedChunk(1<<20), mixedChunk(1<<10)
	for b.Loop() {
		Shape(stdout, stderr)
	}
}
