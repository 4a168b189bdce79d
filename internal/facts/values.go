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
	urlValue     = regexp.MustCompile(`\bhttps?://[^\s<>"'` + "`" + `]+`)
	hostValue    = regexp.MustCompile(`\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|dev|internal|local|lan|cloud|app|co|cn|corp|svc|intra|example|test)\b`)
	ipValue      = regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b`)
	pathValue    = regexp.MustCompile(`(?:^|[\s(` + "`" + `'"])(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]*)*|\b[\w-]+(?:/[\w.-]+)+\.[a-z]{1,5}\b|\b[\w-]+\.(?:ya?ml|json|toml|ini|conf|cfg|env|go|py|ts|js|tsx|jsx|rs|java|sql|md|sh|tf|lock|xml|csv|parquet)\b`)
	versionValue = regexp.MustCompile(`\b[vV]?\d+\.\d+(?:\.\d+)?\b|\b(?:python|node|node\.js|nodejs|go|golang|java|jdk|postgres|postgresql|mysql|redis|kafka|ubuntu|debian|php|ruby|rails|django|react|vue|angular|kubernetes|k8s|terraform|helm|elasticsearch|mongodb|nginx|spark|airflow|dbt|pandas|pg)\s*v?\d+\b`)
	portValue    = regexp.MustCompile(`\bport\s*\d{2,5}\b|端口\s*\d{2,5}`)
	channelValue = regexp.MustCompile(`(?:^|[\s(（])#[a-z][\w-]+|(?:^|[\s(（])@[a-z][\w.-]+`)
	regionValue  = regexp.MustCompile(`\b(?:us|eu|ap|sa|ca|me|af|cn)-(?:east|west|north|south|central|northeast|southeast|northwest|southwest)-\d\b`)
	envVarValue  = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)
	codeValue    = regexp.MustCompile("`[^`\n]{1,80}`")
	emailValue   = regexp.MustCompile(`\b[\w.+-]+@[\w-]+\.[\w.]+\b`)
	// productName is a capitalised name after the statement's first word
	// ("runs on GitHub Actions", "is hosted on AWS").
	productName = regexp.MustCompile(`\s(?:[A-Z][\w.+-]*[a-zA-Z0-9+]|[A-Z]{2,})`)
	infraNoun   = regexp.MustCompile(`\b(?:database|db|cache|queue|broker|bucket|cluster|registry|repo|repository|monorepo|host|hostname|server|endpoint|api|gateway|region|channel|branch|ci|cd|pipeline|staging|prod|production|dev|sandbox|vpn|dns|domain|wiki|docs|runbook|dashboard|namespace|account|tenant|subnet|vpc|cdn|proxy|load balancer|vault|config|logs|metrics|alerts|status page|package manager|runtime|backend|frontend|service|services|app|deploys?|releases?|warehouse|data lake|lake|table|schema|dataset|notebook|cron|scheduler|worker|workers|storage|kafka topic|topic|tracker|board|jira|slack|on-call|oncall|rota|calendar|timezone|time zone|locale|currency|sla|quota|limit|budget|fiscal year|tier|plan|org|organization|workspace|idp|identity provider|provider|registrar|mx|invoice|billing|stack|infra|infrastructure|k8s|kubernetes|terraform state|state|bastion|jump host|vm|vms|instance|instances|shard|replica|primary)\b`)
)

// valuePatterns are the technical values hasValue looks for, on the
// statement as written.
var valuePatterns = []*regexp.Regexp{urlValue, ipValue, pathValue, regionValue, envVarValue, codeValue, emailValue}

// lowerValuePatterns are looked for in the lower-cased statement.
var lowerValuePatterns = []*regexp.Regexp{hostValue, versionValue, portValue, channelValue}

// hasValue reports whether a statement names a technical value: a URL,
// host, address, path, file, version, port, channel, region, environment
// variable, code span or e-mail address.
func hasValue(s statement) bool {
	for _, p := range valuePatterns {
		if p.MatchString(s.text) {
			return true
		}
	}
	for _, p := range lowerValuePatterns {
		if p.MatchString(s.lower) {
			return true
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
	return infraNoun.MatchString(s.lower) && productName.MatchString(s.text)
}

// hanEnvironment reports whether a Chinese "X 是 Y" statement names a
// technical value or a product written in Latin letters ("身份提供商是 Okta").
func hanEnvironment(s statement) bool {
	return s.cjk && (hasValue(s) || hanProduct.MatchString(s.text))
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
	for _, p := range []*regexp.Regexp{urlValue, pathValue, emailValue, envVarValue, regionValue, ipValue} {
		for _, m := range p.FindAllString(text, -1) {
			add(m)
		}
	}
	lower := strings.ToLower(text)
	for _, p := range []*regexp.Regexp{hostValue, channelValue} {
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
	for _, w := range identWord.FindAllString(text, -1) {
		if knownTermSet[strings.ToLower(w)] {
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
var stopWord = map[string]bool{
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
