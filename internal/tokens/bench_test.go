package tokens

import (
	"os"
	"testing"

	"github.com/cairnhq/cairn/internal/lanegen"
)

// BenchmarkCount counts the coding-agent example request (248 KB of
// indented JSON, prose and code) and its canonical rendering (180 KB, the
// bytes the engine counts) with each encoding; cpu-MB/s is the counting
// speed.
func BenchmarkCount(b *testing.B) {
	for _, text := range []struct{ name, file string }{
		{"request", "../../examples/coding-agent-lane.json"},
		{"rendering", "testdata/corpus/texts/coding-agent-lane.rendered.json"},
	} {
		data, err := os.ReadFile(text.file)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range allEncodings {
			b.Run(text.name+"/"+e.Name(), func(b *testing.B) {
				e.Count(nil) // load the vocabulary outside the timing
				b.SetBytes(int64(len(data)))
				cpu := processCPUTime()
				for b.Loop() {
					e.Count(data)
				}
				perOp := float64(processCPUTime()-cpu) / float64(b.N)
				b.ReportMetric(perOp, "cpu-ns/op")
				b.ReportMetric(float64(len(data))/perOp*1e3, "cpu-MB/s")
			})
		}
	}
}

// BenchmarkCountNewLanes counts the requests of `processor bench
// --events 100` (lanegen, seeds 1 to 64) in turn, so that, as in the
// processor, each count is of a lane the counter has not just seen:
// BenchmarkCount's loop over one text finds every piece in the memo, this
// one only the pieces lanes share.
func BenchmarkCountNewLanes(b *testing.B) {
	var lanes [][]byte
	size := 0
	for seed := uint64(1); seed <= 64; seed++ {
		lane := lanegen.RequestJSON(lanegen.RequestOptions{Lane: lanegen.Options{Events: 100, Seed: seed}})
		lanes, size = append(lanes, lane), size+len(lane)
	}
	o200kBase.Count(nil)
	b.SetBytes(int64(size / len(lanes)))
	cpu := processCPUTime()
	k := 0
	for b.Loop() {
		o200kBase.Count(lanes[k%len(lanes)])
		k++
	}
	perOp := float64(processCPUTime()-cpu) / float64(b.N)
	b.ReportMetric(perOp, "cpu-ns/op")
	b.ReportMetric(float64(size/len(lanes))/perOp*1e3, "cpu-MB/s")
}

// BenchmarkLoadVocabulary is the one-time cost of an encoding's first use.
func BenchmarkLoadVocabulary(b *testing.B) {
	for _, e := range allEncodings {
		b.Run(e.Name(), func(b *testing.B) {
			for b.Loop() {
				if _, err := decodeVocabulary(e.vocab.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCountVsTiktokenGo alternates, call by call, this package's
// count and github.com/tiktoken-go/tokenizer's of the example lane's
// canonical rendering (the bytes its before budget counts), so that both
// see the same machine load, and reports their CPU per count and the ratio
// (doc.go cites it).
func BenchmarkCountVsTiktokenGo(b *testing.B) {
	data, err := os.ReadFile("testdata/corpus/texts/coding-agent-lane.rendered.json")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	for _, e := range []*Encoding{o200kBase, cl100kBase} {
		b.Run(e.Name(), func(b *testing.B) {
			other := oracle(b, e.Name())
			e.Count(nil)
			if _, err := other.Count(""); err != nil {
				b.Fatal(err)
			}
			var own, theirs int64
			for b.Loop() {
				t := processCPUTime()
				e.Count(data)
				t2 := processCPUTime()
				if _, err := other.Count(text); err != nil {
					b.Fatal(err)
				}
				own, theirs = own+t2-t, theirs+processCPUTime()-t2
			}
			n := float64(b.N)
			b.ReportMetric(float64(own)/n, "own-cpu-ns/op")
			b.ReportMetric(float64(theirs)/n, "tiktoken-go-cpu-ns/op")
			b.ReportMetric(float64(theirs)/float64(own), "speedup")
		})
	}
}
