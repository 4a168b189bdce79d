package offline

// Local reports that the summarizer computes in this process and charges
// nothing, so a processor need not record its calls as attempts that a
// crash could leave uncertain (consumer.LocalSummarizer).
func (s *Summarizer) Local() bool { return true }
