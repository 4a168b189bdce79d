package tokens

import (
	"os"
	"testing"
)

// BenchmarkCount counts the coding-agent example request (248 KB of JSON,
// prose and code) with each encoding; its MB/s is the counting speed.
func BenchmarkCount(b *testing.B) {
	data, err := os.ReadFile("../../examples/coding-agent-lane.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range allEncodings {
		b.Run(e.Name(), func(b *testing.B) {
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
