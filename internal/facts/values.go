package facts

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Technical values: what makes "X is Y" an environment fact rather than an
// opinion ("the API is slow").
var (
	urlValue     = re(`\bhttps?://[^\s<>"'` + "`" + `]+`)
	hostValue    = re(`\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|dev|internal|local|lan|cloud|app|co|cn|corp|svc|intra|example|test)\b`)
	ipValue      = re(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b`)
	pathValue    = re(`(?:^|[\s(` + "`" + `'"])(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]*)*|\b[\w-]+(?:/[\w.-]+)+\.[a-z]{1,5}\b|\b[\w-]+\.(?:yaml|yml|json|toml|ini|conf|cfg|env|go|py|ts|js|tsx|jsx|rs|java|sql|md|sh|tf|lock|xml|csv|parquet)\b`)
	versionValue = re(`\b[vV]?\d+\.\d+(?:\.\d+)?\b|\b(?:python|node|node\.js|nodejs|go|golang|java|jdk|postgres|postgresql|mysql|redis|kafka|ubuntu|debian|php|ruby|rails|django|react|vue|angular|kubernetes|k8s|terraform|helm|elasticsearch|mongodb|nginx|spark|airflow|dbt|pandas|pg)\s*v?\d+\b`)
	portValue    = re(`\bport\s*\d{2,5}\b|端口\s*\d{2,5}`)
	channelValue = re(`(?:^|[\s(（])#[a-z][\w-]+|(?:^|[\s(（])@[a-z][\w.-]+`)
	regionValue  = re(`\b(?:us|eu|ap|sa|ca|me|af|cn)-(?:east|west|north|south|central|northeast|southeast|northwest|southwest)-\d\b`)
	envVarValue  = re(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)
	codeValue    = re("`[^`\n]{1,80}`")
	emailValue   = re(`\b[\w.+-]+@[\w-]+\.[\w.]+\b`)
	// productName is a capitalised name after the statement's first word
	// ("runs on GitHub Actions", "is hosted on AWS").
	productName = regexp.MustCompile(`\s(?:[A-Z][\w.+-]*[a-zA-Z0-9+]|[A-Z]{2,})`)
)

// infraNouns name things of an environment ("the staging database", "our
// CI"): an "X is Y" statement about one of them that names a product is an
// environment fact.
var infraNouns = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`account alerts api app backend bastion billing board branch broker bucket budget cache calendar cd cdn channel ci cluster config cron currency dashboard database dataset db deploy deploys dev dns docs domain endpoint frontend gateway host hostname idp infra infrastructure instance instances invoice jira k8s kubernetes lake limit locale logs metrics monorepo mx namespace notebook on-call oncall org organization pipeline plan primary prod production provider proxy queue quota region registrar registry release releases replica repo repository rota runbook runtime sandbox scheduler schema server service services shard sla slack stack staging state storage subnet table tenant tier timezone topic tracker vault vm vms vpc vpn warehouse wiki worker workers workspace`) {
		m[w] = true
	}
	return m
}()

// infraPhrases are the infrastructure names of more than one word.
var infraPhrases = []string{"load balancer", "status page", "package manager", "data lake", "kafka topic", "time zone", "fiscal year", "identity provider", "terraform state", "jump host"}

// namesInfra reports whether a lower-cased statement names a thing of an
// environment.
func namesInfra(lower string) bool {
	for _, w := range strings.FieldsFunc(lower, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '-') }) {
		if infraNouns[w] {
			return true
		}
	}
	for _, p := range infraPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// valuePatterns are the technical values hasValue looks for, on the
// statement as written.
var valuePatterns = []matcher{urlValue, regionValue, envVarValue, codeValue, emailValue}

// lowerValuePatterns are looked for in the lower-cased statement.
var lowerValuePatterns = []matcher{hostValue, channelValue}

// numberPatterns are values made of digits, looked for only in a
// statement that holds one.
var numberPatterns = []matcher{ipValue, versionValue, portValue}

// hasValue reports whether a statement names a technical value: a URL,
// host, address, path, file, version, port, channel, region, environment
// variable, code span or e-mail address.
func hasValue(s statement) bool {
	for _, p := range valuePatterns {
		if s.matchText(p) {
			return true
		}
	}
	for _, p := range lowerValuePatterns {
		if s.matchLower(p) {
			return true
		}
	}
	if strings.ContainsAny(s.text, "/.") && s.matchText(pathValue) {
		return true
	}
	if strings.ContainsAny(s.text, "0123456789") {
		for _, p := range numberPatterns {
			if s.matchLower(p) {
				return true
			}
		}
	}
	return false
}

// statesWhere reports whether an "X is Y" statement says where or what a
// thing of the environment is: it names a technical value, or names an
// infrastructure thing and a product ("our CI runs on GitHub Actions").
func statesWhere(s statement) bool {
	if hasValue(s) {
		return true
	}
	return namesInfra(s.lower) && productName.MatchString(s.text)
}

// hanEnvironment reports whether a Chinese "X 是 Y" statement names a
// technical value or a product written in Latin letters ("身份提供商是 Okta").
func hanEnvironment(s statement) bool {
	return s.cjk && (hasValue(s) || s.matchText(hanProduct))
}

var hanProduct = re(`(?:是|在|为|叫|用的是|位于|放在|存放在|存在|放到|跑在|部署在)\s*[A-Z][A-Za-z0-9.+-]+`)

// knownTerms are tools, languages and services common enough in agent
// conversations to be a fact's topic wherever they appear in it.
var knownTerms = strings.Fields(`
go golang python java kotlin scala rust ruby php perl swift typescript javascript node nodejs deno bun
c# c++ elixir erlang haskell clojure lua r julia sql bash zsh powershell
npm pnpm yarn pip poetry uv conda cargo maven gradle bazel make cmake webpack vite esbuild turbo nx lerna
react vue angular svelte next nextjs nuxt django flask fastapi rails spring express nestjs laravel
postgres postgresql mysql mariadb sqlite redis memcached mongodb cassandra dynamodb elasticsearch opensearch
clickhouse snowflake bigquery redshift databricks spark airflow dbt kafka rabbitmq nats sqs sns pubsub
docker kubernetes k8s helm terraform ansible pulumi nginx envoy istio linkerd consul vault
aws gcp azure s3 ec2 lambda cloudflare vercel netlify heroku fly
github gitlab bitbucket jenkins circleci buildkite argo argocd
grafana prometheus datadog sentry pagerduty opsgenie splunk kibana jaeger opentelemetry
slack jira confluence notion linear zendesk intercom salesforce stripe twilio hubspot
pandas numpy polars jupyter tableau looker metabase excel
git pytest jest vitest mocha junit playwright cypress eslint prettier ruff black mypy golangci-lint gofmt
openai anthropic llama ollama vllm
utf-8 json yaml toml csv parquet protobuf grpc graphql rest oauth sso saml jwt
vim emacs vscode intellij
linux ubuntu debian macos windows
staging production prod
`)

var knownTermSet = func() map[string]bool {
	m := make(map[string]bool, len(knownTerms))
	for _, t := range knownTerms {
		m[t] = true
	}
	return m
}()

var (
	identWord   = regexp.MustCompile(`[A-Za-z][\w.+#-]*[\w+#]|[A-Za-z]`)
	namedThing  = regexp.MustCompile(`\b([a-z][\w-]*)[ -](service|team|repo|api|bucket|cluster|database|db|queue|topic|pipeline|channel|branch|dashboard|project|module|job|table)\b`)
	hanThing    = regexp.MustCompile(`([\p{Han}]{2,6})(服务|团队|系统|模块|数据库|仓库|项目|平台|频道|群)`)
	compoundTok = regexp.MustCompile(`\b[a-z]+(?:[-_][a-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z]+\b`)
)

// topicsOf returns the fact's own terms, lower-cased, most telling first:
// code spans, paths and files, hosts, channels and mentions, named things
// ("billing service", "支付服务"), well-known tools and languages, and
// compound identifiers. At most MaxTopics.
func topicsOf(text string) []string {
	var out []string
	add := func(t string) {
		t = strings.ToLower(strings.Trim(t, " `'\".,;:()[]{}（）《》「」"))
		if t == "" || len([]rune(t)) > MaxTopicRunes || slices.Contains(out, t) {
			return
		}
		out = append(out, t)
	}
	for _, m := range codeValue.FindAllString(text, -1) {
		add(m)
	}
	for _, p := range []matcher{urlValue, pathValue, emailValue, envVarValue, regionValue, ipValue} {
		for _, m := range p.FindAllString(text, -1) {
			add(m)
		}
	}
	lower := strings.ToLower(text)
	for _, p := range []matcher{hostValue, channelValue} {
		for _, m := range p.FindAllString(lower, -1) {
			add(m)
		}
	}
	for _, m := range namedThing.FindAllStringSubmatch(lower, -1) {
		if !stopWord[m[1]] {
			add(m[1] + " " + m[2])
		}
	}
	for _, m := range hanThing.FindAllString(text, -1) {
		add(m)
	}
	for i, loc := range identWord.FindAllStringIndex(text, -1) {
		w := text[loc[0]:loc[1]]
		if knownTermSet[strings.ToLower(w)] && (!everydayWord[w] || i > 0 && w != strings.ToLower(w)) {
			add(w)
		}
	}
	for _, m := range compoundTok.FindAllString(text, -1) {
		add(m)
	}
	if len(out) > MaxTopics {
		out = out[:MaxTopics]
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// stopWord holds words that make no topic before "service", "team", ...
// everydayWord are known terms that are also everyday English words ("go
// out", "make sure", "rest assured"): written so, in lower case or first
// in the statement, they name no tool. "Go", "Make" later in a statement
// do, and a tool in backticks is a topic through codeValue.
var everydayWord = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("go make rest next express spring black linear fly notion r c swift rust ruby turbo argo vault consul envoy sentry lambda prod") {
		m[w], m[strings.ToUpper(w[:1])+w[1:]] = true, true
	}
	return m
}()

var stopWord = map[string]bool{
	"at": true, "in": true, "on": true, "to": true, "of": true, "for": true, "from": true, "with": true, "by": true, "into": true,
	"the": true, "a": true, "an": true, "our": true, "this": true, "that": true, "my": true, "your": true,
	"their": true, "every": true, "each": true, "any": true, "one": true, "new": true, "old": true, "same": true,
	"main": false, "whole": true, "other": true, "some": true, "which": true, "its": true,
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}
