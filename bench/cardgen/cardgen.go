// Package cardgen makes realistic capability cards for benchmarks and tests: 5-20 capabilities,
// 3-8 tags, ~300-character descriptions from a fixed vocabulary, a few protocols. The same seed
// gives the same cards. It returns card documents as JSON, the form clients send.
package cardgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

var (
	verbs = strings.Fields(`review summarize translate classify extract forecast audit schedule deploy monitor
		index search rank route triage label scan test lint refactor migrate backup restore encrypt sign verify
		price quote invoice reconcile budget plan draft publish notify escalate approve reject merge tag`)
	nouns = strings.Fields(`pull_request document invoice ticket contract email report image dataset model
		pipeline deployment incident alert budget forecast schema query table dashboard repository branch
		commit release container cluster policy secret certificate customer order shipment payment refund
		campaign lead account meeting calendar transcript recording article`)
	words = strings.Fields(`agent analyses fast reliable secure data team customer support finance legal
		engineering marketing sales operations cloud service queue event stream batch realtime history
		summary detail quality accuracy latency throughput cost center region compliance privacy audit log
		metric trace span error warning retry timeout limit quota usage owner project workspace tenant
		document page section paragraph sentence language english german french spanish code python golang
		rust java typescript review comment suggestion improvement change diff patch merge conflict test
		coverage build artifact release version upgrade dependency vulnerability license scan report chart
		graph table row column field value record entity relation graph knowledge base retrieval answer
		question prompt context memory tool function call plan step goal task workflow approval human loop`)
	tags      = strings.Fields(`code docs finance legal ops security data ml support sales hr infra cloud devops qa design research analytics search chat voice vision translation compliance billing`)
	protocols = []string{"a2a", "mcp", "http", "grpc", "websocket"}
	adjs      = strings.Fields(`Swift Careful Bright Quiet Steady Clever Bold Patient Precise Friendly`)
)

// Card is a generated card document, in the JSON form of the API.
type Card struct {
	AgentID      string       `json:"agentId"`
	Name         string       `json:"name"`
	Description  string       `json:"description"`
	Version      string       `json:"version"`
	Protocols    []string     `json:"protocols"`
	Capabilities []Capability `json:"capabilities"`
	Endpoint     string       `json:"endpoint"`
	Tags         []string     `json:"tags"`
}

// Capability is one generated capability.
type Capability struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags,omitempty"`
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// distinct picks n different values.
func distinct(r *rand.Rand, from []string, n int) []string {
	perm := r.Perm(len(from))
	out := make([]string, 0, n)
	for _, i := range perm[:min(n, len(from))] {
		out = append(out, from[i])
	}
	return out
}

func sentence(r *rand.Rand, chars int) string {
	var b strings.Builder
	for b.Len() < chars {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pick(r, words))
	}
	return b.String() + "."
}

// Make returns the i-th card of the stream seeded with seed.
func Make(seed uint64, i int) Card {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	c := Card{
		AgentID:     fmt.Sprintf("agent-%07d", i),
		Name:        fmt.Sprintf("%s %s Agent %d", pick(r, adjs), strings.ReplaceAll(pick(r, nouns), "_", " "), i),
		Description: sentence(r, 300),
		Version:     fmt.Sprintf("1.%d.0", r.IntN(10)),
		Protocols:   distinct(r, protocols, 1+r.IntN(3)),
		Endpoint:    fmt.Sprintf("https://agents.example.com/%d/task", i),
		Tags:        distinct(r, tags, 3+r.IntN(6)),
	}
	seen := map[string]bool{}
	for len(c.Capabilities) < 5+r.IntN(16) {
		name := pick(r, verbs) + "_" + pick(r, nouns)
		if seen[name] {
			continue
		}
		seen[name] = true
		cp := Capability{Name: name, Description: sentence(r, 100)}
		if r.IntN(3) == 0 {
			cp.Tags = distinct(r, tags, 1+r.IntN(2))
		}
		c.Capabilities = append(c.Capabilities, cp)
	}
	return c
}

// Documents returns n card documents as JSON.
func Documents(seed uint64, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		b, err := json.Marshal(Make(seed, i))
		if err != nil {
			panic(err) // plain structs of strings always encode
		}
		out[i] = b
	}
	return out
}

// Words returns the vocabulary the descriptions are made of, for building queries.
func Words() []string { return words }

// Queries returns n free-text queries of 1, 2 and 3 distinct words of the vocabulary, in turn,
// drawn from seed: the searches bench/meshdiscover and the search-latency benchmarks send.
func Queries(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, 0, n)
	for i := range n {
		var q []string
		for len(q) < 1+i%3 { // the vocabulary repeats a few words
			if w := words[r.IntN(len(words))]; !slices.Contains(q, w) {
				q = append(q, w)
			}
		}
		out = append(out, strings.Join(q, " "))
	}
	return out
}
