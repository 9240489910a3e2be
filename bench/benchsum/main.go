// Command benchsum summarises the output of `go test -bench` over several
// runs (-count): for every figure of BENCHMARKS.md, bgexec's and the
// baseline's median, the ratio's median with its min–max spread, the target
// and whether the median meets it; then every metric of every benchmark
// with its median, mean and min–max. It prints Markdown.
//
//	go test -run '^$' -bench '^BenchmarkExec$' -count 5 -v . | go run ./bench/benchsum
//	go run ./bench/benchsum results/raw.txt
//
// Benchmarks that were skipped (the reason is read from -v output) or that
// failed are listed as such instead of a figure.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// figure is one row of the figures table: which benchmark and metrics it
// reads, and its target. An empty op means a figure without a target.
type figure struct {
	name      string
	bench     string
	lib, base string // metrics shown for bgexec and its baseline
	ratio     string // the metric the target is about
	op        string // "<=", ">=" or ""
	target    float64
	detail    string // a metric whose median is shown after the name, or ""
}

var figures = []figure{
	{"poll, nothing new: 200k chars retained vs an empty session", "BenchmarkPoll/idle", "ns/op", "base-ns/op", "ratio", "<=", 2, ""},
	{"poll returning 1,000 new chars: 200k vs 1k retained", "BenchmarkPoll/new", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 2, ""},
	{"log offset 0 limit 10: 200k vs 1k retained", "BenchmarkLog", "ns/op", "base-ns/op", "ratio", "<=", 2, ""},
	{"list of a 1-session scope, n sessions held in other scopes (target run: 5,000) vs none", "BenchmarkHeld/list", "ns/op", "base-ns/op", "ratio", "<=", 1.5, "held"},
	{"exec `true` with n idle sessions held (target run: 5,000) vs os/exec, same descriptors open", "BenchmarkHeld/exec", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 1, "held"},
	{"pipe ingest vs a read loop, same pipe (256 KiB) and reads (128 KiB)", "BenchmarkIngestPipe/equal", "MB/s", "base-MB/s", "ratio", ">=", 0.8, "MiB"},
	{"pipe ingest, host CPU per MB", "BenchmarkIngestPipe/equal", "cpu-ns/MB", "base-cpu-ns/MB", "cpu-ratio", "<=", 1.5, ""},
	{"pipe ingest, CPU of this process alone, without the producer (no target)", "BenchmarkIngestPipe/equal", "", "", "own-cpu-ratio", "", 0, ""},
	{"heap per session over its retained text (output unpolled)", "BenchmarkHeapPerSession", "heap-B/session", "retained-B/session", "ratio", "<=", 1.3, "sessions"},
	{"foreground exec p50 vs os/exec into bytes.Buffers, cgroup", "BenchmarkExec/cgroup", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 1.05, ""},
	{"foreground exec host CPU, cgroup", "BenchmarkExec/cgroup", "cpu-ns/op", "base-cpu-ns/op", "cpu-ratio", "<=", 1.2, ""},
	{"foreground exec p50 vs os/exec into bytes.Buffers, process group", "BenchmarkExec/pgroup", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 1.05, ""},
	{"foreground exec host CPU, process group", "BenchmarkExec/pgroup", "cpu-ns/op", "base-cpu-ns/op", "cpu-ratio", "<=", 1.2, ""},
	{"foreground exec p50, process group, concurrent callers", "BenchmarkExecConcurrent", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 1.1, "callers"},
	{"sandboxed exec p50 from the pool vs a gateway exec, alternating", "BenchmarkSandboxExecPaired", "p50-ns", "base-p50-ns", "p50-ratio", "<=", 1.5, ""},
	{"empty poll, n host processes, vs a log of 10 lines (target: ns/op ≤ 50 µs and B/op ≤ 4 KB, absolute)", "BenchmarkBusyHost/poll", "ns/op", "base-ns/op", "ratio", "", 0, "host-procs"},
	{"list of 10 sessions, n host processes, vs a log of 10 lines (no target)", "BenchmarkBusyHost/list", "ns/op", "base-ns/op", "ratio", "", 0, "host-procs"},
	{"a fresh resource view vs the old scan of every /proc/<pid>/stat (no target)", "BenchmarkBusyHost/read", "p50-ns", "base-p50-ns", "p50-ratio", "", 0, "host-procs"},
}

var peers = []figure{
	{"exec `true`: go-cmd/cmd", "BenchmarkExecPeers/gocmd", "p50-ns", "base-p50-ns", "p50-ratio", "", 0, ""},
	{"exec `true`: Node child_process, as the reference", "BenchmarkExecPeers/node", "p50-ns", "base-p50-ns", "p50-ratio", "", 0, ""},
	{"exec `true`: C posix_spawn + waitpid (limit)", "BenchmarkExecPeers/c-posix_spawn", "p50-ns", "base-p50-ns", "p50-ratio", "", 0, ""},
	{"exec `true`, process group: the floor, a hand-written runner keeping bgexec's promises (bgexec's column), vs os/exec", "BenchmarkExecFloor/exec/pgroup", "floor-p50-ns", "base-p50-ns", "floor-p50-ratio", "", 0, ""},
	{"exec `true`, process group: the floor's host CPU vs os/exec's", "BenchmarkExecFloor/exec/pgroup", "floor-cpu-ns/op", "base-cpu-ns/op", "floor-cpu-ratio", "", 0, ""},
	{"exec `true`, process group: bgexec vs the floor", "BenchmarkExecFloor/exec/pgroup", "p50-ns", "floor-p50-ns", "over-floor-p50-ratio", "", 0, ""},
	{"exec `true`, process group: bgexec's host CPU vs the floor's", "BenchmarkExecFloor/exec/pgroup", "cpu-ns/op", "floor-cpu-ns/op", "over-floor-cpu-ratio", "", 0, ""},
	{"exec `true`, cgroup: the floor, a hand-written runner keeping bgexec's promises (bgexec's column), vs os/exec", "BenchmarkExecFloor/exec/cgroup", "floor-p50-ns", "base-p50-ns", "floor-p50-ratio", "", 0, ""},
	{"exec `true`, cgroup: the floor's host CPU vs os/exec's", "BenchmarkExecFloor/exec/cgroup", "floor-cpu-ns/op", "base-cpu-ns/op", "floor-cpu-ratio", "", 0, ""},
	{"exec `true`, cgroup: bgexec vs the floor", "BenchmarkExecFloor/exec/cgroup", "p50-ns", "floor-p50-ns", "over-floor-p50-ratio", "", 0, ""},
	{"exec `true`, cgroup: bgexec's host CPU vs the floor's", "BenchmarkExecFloor/exec/cgroup", "cpu-ns/op", "floor-cpu-ns/op", "over-floor-cpu-ratio", "", 0, ""},
	{"exit to result (stamp-to-return, µs): the floor vs os/exec", "BenchmarkExecFloor/stamp", "floor-p50-µs", "base-p50-µs", "floor-p50-ratio", "", 0, ""},
	{"exit to result (stamp-to-return, µs): bgexec vs the floor", "BenchmarkExecFloor/stamp", "p50-µs", "floor-p50-µs", "over-floor-p50-ratio", "", 0, ""},
	{"pipe ingest: os/exec into a bytes.Buffer", "BenchmarkIngestPipe/peer=osexec-buffer", "MB/s", "base-MB/s", "ratio", "", 0, ""},
	{"pipe ingest: go-cmd/cmd", "BenchmarkIngestPipe/peer=gocmd", "MB/s", "base-MB/s", "ratio", "", 0, ""},
	{"pipe ingest: Node, counting bytes", "BenchmarkIngestPipe/peer=node-bytes", "MB/s", "base-MB/s", "ratio", "", 0, ""},
	{"pipe ingest: Node, as the reference (string aggregate)", "BenchmarkIngestPipe/peer=node-reference", "MB/s", "base-MB/s", "ratio", "", 0, ""},
	{"pipe ingest: C read loop, 1 MiB pipe and reads (limit)", "BenchmarkIngestPipe/limit=c-readloop", "MB/s", "base-MB/s", "ratio", "", 0, ""},
}

// results holds every value of every metric of every benchmark, in order.
type results struct {
	order   []string
	metrics map[string]map[string][]float64
	units   map[string][]string // metric names per benchmark, in order
	skipped map[string]string   // benchmark → reason
	failed  map[string]string
}

var (
	procsSuffix = regexp.MustCompile(`-\d+$`)
	timeUnit    = regexp.MustCompile(`(^|-)ns($|/)`)
)

func parse(r io.Reader) (*results, error) {
	res := &results{
		metrics: map[string]map[string][]float64{},
		units:   map[string][]string{},
		skipped: map[string]string{},
		failed:  map[string]string{},
	}
	var logs []string // indented lines since the last unindented one
	var after map[string]string
	var afterName string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "    ") {
			msg := strings.TrimSpace(line)
			logs = append(logs, msg)
			if after != nil && after[afterName] == "" { // the message follows the line without -v
				after[afterName] = msg
			}
			continue
		}
		pending := strings.Join(logs, "; ")
		logs, after = nil, nil
		for prefix, into := range map[string]map[string]string{"--- SKIP: ": res.skipped, "--- FAIL: ": res.failed} {
			if name, ok := strings.CutPrefix(line, prefix); ok {
				name = strings.TrimSpace(name)
				into[name] = pending
				after, afterName = into, name
			}
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(f[0], "")
		if res.metrics[name] == nil {
			res.metrics[name] = map[string][]float64{}
			res.order = append(res.order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: value %q: %v", name, f[i], err)
			}
			unit := f[i+1]
			if _, seen := res.metrics[name][unit]; !seen {
				res.units[name] = append(res.units[name], unit)
			}
			res.metrics[name][unit] = append(res.metrics[name][unit], v)
		}
	}
	return res, sc.Err()
}

type stats struct {
	n                    int
	median, mean, lo, hi float64
}

func summarize(v []float64) stats {
	s := slices.Clone(v)
	slices.Sort(s)
	st := stats{n: len(s), lo: s[0], hi: s[len(s)-1]}
	if len(s)%2 == 1 {
		st.median = s[len(s)/2]
	} else {
		st.median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	for _, x := range s {
		st.mean += x
	}
	st.mean /= float64(len(s))
	return st
}

// format shows v in unit: times (units with an "ns" part) in ns/µs/ms/s, ratios with
// three decimals, bytes per session in KiB, others with four digits.
func format(unit string, v float64) string {
	switch {
	case timeUnit.MatchString(unit):
		rest := unit[timeUnit.FindStringIndex(unit)[1]:] // "", "op" or "MB"
		if rest == "op" {
			rest = ""
		} else if rest != "" {
			rest = "/" + rest
		}
		a := math.Abs(v)
		switch {
		case a >= 1e9:
			return fmt.Sprintf("%.3g s%s", v/1e9, rest)
		case a >= 1e6:
			return fmt.Sprintf("%.3g ms%s", v/1e6, rest)
		case a >= 1e3:
			return fmt.Sprintf("%.3g µs%s", v/1e3, rest)
		default:
			return fmt.Sprintf("%.3g ns%s", v, rest)
		}
	case strings.HasSuffix(unit, "ratio"):
		switch a := math.Abs(v); {
		case a >= 100:
			return fmt.Sprintf("%.0f", v)
		case a >= 10:
			return fmt.Sprintf("%.1f", v)
		default:
			return fmt.Sprintf("%.3f", v)
		}
	case strings.HasSuffix(unit, "MB/s"):
		return fmt.Sprintf("%.0f MB/s", v)
	case strings.HasSuffix(unit, "B/session"):
		return fmt.Sprintf("%.1f KiB", v/1024)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

// median returns the formatted median of metric unit of bench, or "–".
func (r *results) median(bench, unit string) string {
	v := r.metrics[bench][unit]
	if len(v) == 0 {
		return "–"
	}
	return format(unit, summarize(v).median)
}

// status says why a benchmark has no figures, or "".
func (r *results) status(bench string) string {
	for name, reason := range r.skipped {
		if name == bench || strings.HasPrefix(bench, name+"/") {
			return "skipped: " + reason
		}
	}
	for name, reason := range r.failed {
		if name == bench {
			return "failed: " + reason
		}
	}
	return "not run"
}

func (r *results) figureTable(w io.Writer, title string, figs []figure) {
	fmt.Fprintf(w, "## %s\n\n", title)
	fmt.Fprintln(w, "| figure | bgexec | baseline | ratio median (min–max over runs) | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, f := range figs {
		if d := r.metrics[f.bench][f.detail]; f.detail != "" && len(d) > 0 {
			f.name += fmt.Sprintf(" (%s: %g)", f.detail, summarize(d).median)
		}
		target, met := "–", "–"
		if f.op != "" {
			target = fmt.Sprintf("%s %s %g", f.ratio, map[string]string{"<=": "≤", ">=": "≥"}[f.op], f.target)
		}
		v := r.metrics[f.bench][f.ratio]
		if len(v) == 0 {
			fmt.Fprintf(w, "| %s | %s | | | %s | |\n", f.name, r.status(f.bench), target)
			continue
		}
		st := summarize(v)
		if f.op != "" {
			ok := st.median <= f.target
			if f.op == ">=" {
				ok = st.median >= f.target
			}
			met = "not met"
			if ok {
				met = "met"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s (%s–%s over %d) | %s | %s |\n",
			f.name, r.median(f.bench, f.lib), r.median(f.bench, f.base),
			format(f.ratio, st.median), format(f.ratio, st.lo), format(f.ratio, st.hi), st.n, target, met)
	}
	fmt.Fprintln(w)
}

func (r *results) metricTable(w io.Writer) {
	fmt.Fprintln(w, "## All metrics")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| benchmark | metric | runs | median | mean | min–max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, name := range r.order {
		for _, unit := range r.units[name] {
			st := summarize(r.metrics[name][unit])
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s – %s |\n", name, unit, st.n,
				format(unit, st.median), format(unit, st.mean), format(unit, st.lo), format(unit, st.hi))
		}
	}
	var names []string
	for name := range r.skipped {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Skipped:")
		fmt.Fprintln(w)
		for _, name := range names {
			fmt.Fprintf(w, "- %s: %s\n", name, r.skipped[name])
		}
	}
}

func main() {
	var in io.Reader = os.Stdin
	if len(os.Args) > 1 {
		var readers []io.Reader
		for _, path := range os.Args[1:] {
			f, err := os.Open(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchsum:", err)
				os.Exit(1)
			}
			defer f.Close()
			readers = append(readers, f)
		}
		in = io.MultiReader(readers...)
	}
	res, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsum:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	res.figureTable(w, "Figures", figures)
	res.figureTable(w, "Peers and limits (no targets; ratio = bgexec over the peer)", peers)
	res.metricTable(w)
}
