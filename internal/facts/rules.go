package facts

import (
	"regexp"
	"strings"

	"github.com/cairnhq/cairn/events"
)

// Kind is what sort of fact a candidate is: one of events.FactKinds.
type Kind = string

// The fact kinds (events.FactKinds).
const (
	KindPreference  = events.FactPreference
	KindDecision    = events.FactDecision
	KindConstraint  = events.FactConstraint
	KindEnvironment = events.FactEnvironment
	KindIdentity    = events.FactIdentity
	KindNote        = events.FactNote
)

// validKind returns k when it is a known kind, else KindNote.
func validKind(k string) Kind {
	for _, known := range events.FactKinds {
		if k == known {
			return k
		}
	}
	return KindNote
}

// A rule recognises one way people state a fact of one kind. Latin rules
// match the lower-cased statement; rules with cased set match it as
// written (names are capitalised); Han rules match it as written.
type rule struct {
	name   string
	kind   Kind
	weight float64
	re     matcher
	cased  bool
	// unless, when set, cancels a match whose statement it also matches.
	unless matcher
	// needs, when set, must also hold for the statement.
	needs func(statement) bool
	// words and phrases, when set, stand for re: the rule matches a
	// statement holding one of the words (lower-cased, as a whole word) or
	// one of the phrases. A long list of words is found faster by lookup
	// than by an expression.
	words   map[string]bool
	phrases []string
}

// wordSet is the set of the space-separated words of list.
func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}

// onlyAsWord reports whether "only" stands in the statement as a word,
// not inside one ("commonly").
func onlyAsWord(s statement) bool {
	for i := strings.Index(s.lower, "only"); i >= 0; {
		if i == 0 || !isLetter(s.lower[i-1]) {
			return true
		}
		next := strings.Index(s.lower[i+4:], "only")
		if next < 0 {
			break
		}
		i += 4 + next
	}
	return false
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// keepScore is the score a statement needs to be proposed. A rule alone
// weighs 1.5 to 3; a standing marker ("always", "from now on", 以后)
// adds standingBonus and a note marker ("remember", "note that") adds
// noteBonus, so a weak rule is kept only with a marker beside it.
const (
	keepScore     = 2.0
	standingBonus = 1.0
	noteBonus     = 0.5
)

func re(expr string) matcher { return newMatcher(expr) }

// rules are tried in order; a statement takes the kind of its heaviest
// match, the first of equal weight.
var rules = []rule{
	// Decisions.
	{name: "decision/decided", kind: KindDecision, weight: 3,
		re:     re(`\b(?:we|i|the team|team|they|leadership|management|product|everyone|we all)\s+(?:have\s+|'ve\s+|has\s+|all\s+|finally\s+|just\s+|already\s+)?(?:decided|agreed|settled on|chose|picked|signed off on|approved|voted)\b|\b(?:decided|agreed on|agreed to|agreed that|agreed with|settled on|signed off on|standardi[sz]ed on|ruled out|ruled that)\b|\bmade (?:that|the|this|a|the final) (?:call|decision)\b`),
		unless: re(`\b(?:haven't|have not|hasn't|not yet|didn't|undecided|not decided|to be decided|tbd|if we|whether)\b`)},
	{name: "decision/label", kind: KindDecision, weight: 3,
		re: re(`^(?:decision|decided|agreed|resolution|final decision|final call|verdict|conclusion|outcome|ruling)\b[^:：]{0,40}[:：—]`)},
	{name: "decision/settled", kind: KindDecision, weight: 3,
		re: re(`\b(?:the decision is|decision is to|decision was to|it's decided|it is decided|that's settled|it's settled|we have a decision|consensus is|the (?:call|verdict|outcome|conclusion|consensus|resolution|ruling) (?:is|was|from|of))\b`)},
	{name: "decision/commitment", kind: KindDecision, weight: 2.5,
		re:     re(`\b(?:we're|we are|we'll|we will|let's|lets)\s+(?:go(?:ing)? with|stick(?:ing)? with|standardi[sz](?:e|ing) on|keep(?:ing)?|freez(?:e|ing)|drop(?:ping)?|deprecat(?:e|ing)|sunset(?:ting)?|migrat(?:e|ing) to|mov(?:e|ing) to|switch(?:ing)? to|adopt(?:ing)?|support(?:ing)? only)\b`),
		unless: re(`\b(?:keep(?:ing)? (?:going|looking|trying|digging|at it|an eye|it simple|you posted|in touch)|move on|moving on|to the next|see|try)\b`)},
	{name: "decision/frozen", kind: KindDecision, weight: 2.5,
		re: re(`\b(?:is|are|stays|stay|remains|remain)\s+(?:frozen|locked)\b|\bfreeze (?:is|on)\b|\blocked (?:in|at)\b|^going with\b`)},
	{name: "decision/zh", kind: KindDecision, weight: 3,
		re:     re(`决定|约定|说好了|说定了|定了|定下来|已定|敲定|拍板|达成一致|商定|一致同意|确定(?:用|采用|使用|了)|最终(?:用|选|采用|方案|决定)|就这么定|同意(?:用|采用)|结论是|共识是`),
		unless: re(`决定不了|还没定|没定|未定|你决定|你来决定|你定|看你|待定|再定|搞定|定位|约定的(?:会议|时间|地点)`)},

	// Identity and ownership.
	{name: "identity/i-am", kind: KindIdentity, weight: 3, cased: true,
		re: re(`\b(?:I'm|I am|I’m|My name is|my name is|This is|this is)\s+[A-Z][\w'’-]+(?:\s[A-Z][\w'’-]+)?\b.*\b(?:own|owns|lead|leads|manage|manages|maintain|maintains|responsible|in charge|on the|from the|work on|work in|head of|on-call|oncall|team|admin|administrator|owner|lead|manager|maintainer|engineer|developer|DBA|PM|CTO|CEO|founder|analyst|architect|SRE|contact|head|director|designer|scientist)\b`)},
	{name: "identity/our-role", kind: KindIdentity, weight: 3, cased: true,
		re: re(`\b[Oo]ur\s+(?:[\w-]+\s+){0,2}(?:manager|lead|admin|administrator|DBA|PM|owner|contact|engineer|analyst|architect|SRE|CTO|CEO|director|designer|accountant|maintainer)\s+(?:is\s+)?[A-Z][a-z]+`)},
	{name: "identity/i-own", kind: KindIdentity, weight: 3, cased: true,
		re: re(`\bI\s+(?:own|maintain|lead|manage|am responsible for|am in charge of|look after|am the (?:owner|lead|maintainer|admin|DBA|PM|contact|point of contact|on-call)(?: of| for)?)\s+\S`)},
	{name: "identity/x-owns", kind: KindIdentity, weight: 3, cased: true,
		re:     re(`(?:\b[A-Z][a-z]+|@[\w.-]+|\b[Tt]he [\w-]+ team|\b[\w-]+ team)\s+(?:owns|maintains|leads|manages|is responsible for|are responsible for|is in charge of|looks after|handles)\b`),
		unless: re(`^(?:it|this|that|which)\b`)},
	{name: "identity/x-is-our", kind: KindIdentity, weight: 3, cased: true,
		re: re(`(?:\b[A-Z][a-z]+|@[\w.-]+)\s+is\s+(?:our|the)\s+(?:[\w-]+\s+){0,2}(?:owner|lead|maintainer|DBA|dba|admin|administrator|contact|point of contact|on-call|oncall|PM|pm|manager|architect|expert|go-to|reviewer|approver|SRE|sre|champion|steward)\b`)},
	{name: "identity/owned-by", kind: KindIdentity, weight: 3, cased: true,
		re: re(`\b(?:owned|maintained|managed|run) by\s+(?:[A-Z@]|the [\w-]+ team)`)},
	{name: "identity/go-to", kind: KindIdentity, weight: 2.5,
		re: re(`\b(?:she|he|they|[a-z]+)(?:'s|’s| is| are)\s+(?:the one|the person|the people|the go-to|who|whom)\b.*\b(?:ping|ask|contact|talk to|go to|reach|escalate|call)\b|\b(?:is|are)\s+(?:handled|owned|run|managed|maintained|covered|approved)\s+by\b|\bbelongs? to\s+(?:@|the [\w-]+ team|[a-z]+(?:'s)? team)|\bownership of\b|\bsits with\b|\bpoint of contact\b`)},
	{name: "identity/ask-x", kind: KindIdentity, weight: 2.5, cased: true,
		re: re(`\b(?:[Aa]sk|[Pp]ing|[Cc]ontact|[Rr]each out to|[Tt]alk to|[Ee]scalate to|[Ll]oop in|[Cc]heck with)\s+(?:@[\w.-]+|[A-Z][a-z]+)\s+(?:for|about|if|when|before|on|with|first)\b`)},
	{name: "identity/zh", kind: KindIdentity, weight: 3,
		re:     re(`我是.{1,24}?(?:负责|管|维护|组|团队|管理员|负责人|经理|工程师|主管)|负责(?:的|[，。,]|$)|由我(?:来)?(?:维护|负责|管)|有问题(?:@|找|问)|找\s*@?[A-Z][a-z]+|找\s*@|(?:问题|事情|事|需求|权限|审批|报销|发票|报修|申请|改动|变更|上线|发布|合并)[^，。]{0,6}找|(?:DBA|dba|负责人|owner|on-call|oncall|值班|对接人|联系人|管理员|PM|pm|产品经理|技术负责人)\s*(?:是|找)|找[^，。]{0,8}(?:过目|审批|审核|确认|处理|对接|报修|沟通)|我叫[\p{Han}A-Za-z]{1,8}|我负责|(?:由|归).{1,16}?(?:负责|管理|维护|管)|负责人是|对接人是|联系人是|管理员是|是我们的(?:DBA|dba|负责人|运维|产品经理|架构师|对接人|管理员|技术负责人|owner|联系人|值班)|[\p{Han}A-Za-z@]{1,12}(?:负责|维护|管理)(?:着)?[\p{Han}A-Za-z ]{1,20}(?:服务|系统|模块|项目|仓库|平台|团队|数据库|业务)|找[\p{Han}A-Za-z@]{1,8}(?:处理|确认|审批|审核|对接)`),
		unless: re(`谁|哪位`)},

	// Constraints.
	{name: "constraint/never", kind: KindConstraint, weight: 2.5,
		re:     re(`\bnever\b|\bdon't ever\b|\bdo not ever\b|\bnot ever\b`),
		unless: re(`\bnever (?:seen|saw|had|been|did|done|knew|known|heard|thought|noticed|used to|got|gotten|happened|worked|occurred|expected|imagined|realized|realised|mind|fails|ends)\b|\b(?:i've|i have|i'd|we've|we have|has|had|you've|'ve) never\b|\bnever-ending\b`)},
	{name: "constraint/dont", kind: KindConstraint, weight: 2.5,
		re:     re(`^(?:please\s+)?(?:don't|do not|dont|avoid|stop)\s+\S`),
		unless: re(`^(?:please\s+)?(?:don't|do not|dont)\s+(?:worry|know|think|care|mind|bother|understand|see|get|have|need|remember|like|feel|want|recall|even|forget|hesitate|wait)\b|^stop\b.*\b(?:now|it|this|that|there)\b`)},
	{name: "constraint/we-dont", kind: KindConstraint, weight: 2.5,
		re: re(`\b(?:we|you|nobody|no one|services?|clients?|apps?|jobs?|code)\s+(?:don't|do not|doesn't|does not|never|no longer|shouldn't|should not|mustn't|must not|can't|cannot|may not|aren't allowed to|are not allowed to)\s+(?:use|write|deploy|ship|support|allow|accept|merge|commit|store|log|touch|push|call|run|expose|share|edit|modify|delete|drop|send|print|hardcode|hard-code|depend|talk|access|read|bypass|skip)\b`)},
	{name: "constraint/nobody", kind: KindConstraint, weight: 2.5,
		re: re(`\b(?:nobody|no one|none of (?:us|you|them))\b.*\b(?:should|may|can|is allowed|are allowed|gets? to|must)\b|\bonly\s+(?:\w+\s+){0,4}(?:may|can|should|is allowed|are allowed|gets? to|have access|has access)\b`)},
	{name: "constraint/without", kind: KindConstraint, weight: 2.5,
		re: re(`\b(?:nothing|no|never)\b.{0,60}\bwithout\b|\bwaits? for .{0,30}(?:approval|sign-off|signoff|review|go-ahead)\b|\bneeds? .{0,20}(?:approval|sign-off|signoff)\b`)},
	{name: "constraint/no-x", kind: KindConstraint, weight: 2.5,
		re: re(`^(?:no|zero)\s+[\w-]+(?:\s+[\w-]+){0,3}\s+(?:during|on|in|before|after|without|outside|until|unless|from|to|into|for)\b`)},
	{name: "constraint/wont-be", kind: KindConstraint, weight: 2.5,
		re: re(`\b(?:won't|will not|shouldn't|should not|mustn't|must not|can't|cannot)\s+be\s+(?:touched|changed|modified|deleted|moved|migrated|exported|shared|used|exposed|committed|logged|stored|sent|contacted|included|counted|shown|displayed|copied|edited)\b`)},
	{name: "constraint/must", kind: KindConstraint, weight: 2.5,
		re:     re(`\b(?:must|must not|mustn't|shall|shall not|may not)\b`),
		unless: re(`\b(?:it|that|this|there|which|he|she|they|you|i)\s+must\s+(?:be|have)\b|\bmust have (?:been|had|done|seen|missed|broken|changed)\b|\bi must (?:say|admit|have|confess)\b`)},
	{name: "constraint/only", kind: KindConstraint, weight: 2,
		re:     re(`only(?:\s+(?:from|on|via|through|in|to|after|before|when|with|by|during|if|within|inside|between|for|against|under|required|needed|allowed|valid|used|applies|apply)\b|[.!]?$|\s+(?:and|but|so|because)\b|,)`),
		needs:  onlyAsWord,
		unless: re(`\b(?:i only|we only just|only just|if only|only thing|the only|not only|only one|only once|only a few|only a little|only after i|only when i)\b`)},
	{name: "constraint/forbidden", kind: KindConstraint, weight: 2.5,
		re: re(`\b(?:not allowed|isn't allowed|aren't allowed|is forbidden|are forbidden|forbidden|prohibited|not permitted|under no circumstances|no exceptions|off-limits|off limits|read-only|read only|is a hard rule|hard requirement|non-negotiable|requires? (?:a |an |two |2 |one |1 )?(?:approvals?|reviews?|sign-offs?|signoffs?|tickets?|change requests?))\b`)},
	{name: "constraint/always-imperative", kind: KindConstraint, weight: 2,
		re: re(`^(?:please\s+)?always\s+\S`)},
	{name: "constraint/make-sure", kind: KindConstraint, weight: 1.5,
		re: re(`\b(?:make sure|ensure|be sure|has to|have to|needs? to|required|requires|mandatory)\b`)},
	{name: "constraint/zh", kind: KindConstraint, weight: 2.5,
		re:     re(`不要|不许|不准|不得|不可以|不能(?:用|在|把|直接|随便|往|给|提交|推|改|删)|禁止|严禁|切勿|千万别|千万不要|绝对不|永远不要|别(?:再)?(?:用|在|把|往|动|碰|改|删|提交|推|直接|打印|写|拿|让|给|发|存|传|开|关|跑|部署|合并|联系)|必须|务必|一定要|强制|只能|只允许|只在|只从|只有.{0,12}(?:才(?:能|可以)|保留|可以|能)|只读|需要.{0,8}审批|只(?:用|按|算|存放|存|放|上传|传|展示|联系|发|走|读|保留|接受|支持|部署|跑|给|对|看|收|退|送|统计|包含|含)|不(?:再|会)?(?:导出|展示|联系|送|迁移|上传|包含|含|算|提交|推送|部署|允许|接受|存|共享|外传|打印|记录)|不允许|不可|不应该|不应|不该|不准许|只认|只看|为准|不放行|不(?:做|动|引|碰|升|降)(?:[^一下了吧]|$)`),
		unless: re(`不要紧|没必要|不必|我不能|我们不能确定|不能理解|不能复现|要不要|不用谢|不用了|不用担心|不会吧|算了`)},

	// Preferences and conventions.
	{name: "preference/we-use", kind: KindPreference, weight: 2,
		re:     re(`\b(?:we|i|our team|the team|this (?:repo|project|team|codebase|service|monorepo)|everyone|everybody|all of us|our (?:repo|project|team|codebase))\s+(?:(?:always|usually|generally|mostly|only|all|now|typically|normally)\s+)?(?:use|uses|prefer|prefers|like to|tend to|write|writes|name|format|lint|build|builds|deploy|deploys|ship|ships|release|releases|keep|keeps|put|store|follow|follows|stick to|stick with|standardi[sz]e on|rely on|go with|work in|squash|rebase|merge|tag|pin|vendor|document|review|target|require|requires|run|runs|host|hosts)\b`),
		unless: re(`\b(?:i|we) (?:use|run|write|build|deploy|merge|review|tag|keep|put) (?:it|this|that|them|the same)\b|\bwe run into\b`)},
	{name: "preference/prefer", kind: KindPreference, weight: 2,
		re: re(`\b(?:i|we)\s*(?:'d|would)?\s*(?:really\s+)?(?:prefer|rather)\b|\bpreferably\b|\bpreferred\b|\bprefers\b`)},
	{name: "preference/not-y", kind: KindPreference, weight: 2,
		re: re(`\b(?:use|uses|using|with|in|prefer|pick|choose)\s+[\w./+#-]+(?:\s+[\w./+#-]+)?\s*(?:,\s*not|instead of|rather than|over)\s+[\w./+#-]+|[\w./+#"'”’)-],\s*not\s+[\w./+#-]+\b`)},
	{name: "preference/imperative", kind: KindPreference, weight: 1.5,
		re:     re(`^(?:please\s+)?(?:use|keep|stick to|stick with|prefer|write|reply|answer|respond|format|name|prefix|default to|put|store|pin|target|call|address|refer to)\s+\S`),
		unless: re(`^(?:please\s+)?[\w ]+?\s+(?:it|this|that|these|those|them|me|a|an|one|some)\b`)},
	{name: "preference/habit", kind: KindPreference, weight: 2,
		re: re(`\bwe(?:'re| are)\s+an?\s+[\w.+#-]+\s+(?:shop|house)\b|\b(?:favou?r|favou?rs|lean towards|leans towards|our go-to|my go-to)\b|\bkeep (?:it|them|things|everything|answers|replies|responses|messages|prs|commits|functions|lines|sentences)\s+(?:short|brief|small|concise|simple|plain|under|below)\b`)},
	{name: "preference/style", kind: KindPreference, weight: 2,
		re:     re(`^(?:please\s+)?(?:always\s+)?(?:keep|use|sign|address|format|reply|respond|answer|round|name|prefix|quote|cite|spell|capitali[sz]e|default|avoid|omit|stick|leave out|write)\b.*\b(?:tone|format|formatting|style|replies|reply|emails?|messages?|answers?|commit messages?|names?|dates?|numbers?|percentages?|units?|decimals?|currency|time ?zones?|language|english|chinese|headings?|titles?|subject lines?|bullets?|summaries|summary|changelogs?|comments?|signature|greetings?|sign-offs?|words|sentences|paragraphs|emojis?|exclamation marks?)\b`),
		unless: re(`^(?:please\s+)?(?:always\s+)?\w+\s+(?:a|an|this|that|it|these|those|me|one)\b`)},
	{name: "preference/cadence", kind: KindPreference, weight: 1.5,
		re: re(`\bevery (?:day|morning|evening|week|weekday|monday|tuesday|wednesday|thursday|friday|saturday|sunday|sprint|release|quarter|month|year)\b|\b(?:daily|weekly|monthly|quarterly)\b`)},
	{name: "preference/please", kind: KindPreference, weight: 2,
		re:     re(`\bplease\s+(?:always|keep|use|stick|prefer|default|reply|answer|respond|format|avoid|make sure|never|only|don't|do not)\b`),
		unless: re(`\bplease\s+(?:keep|use)\s+(?:it|this|that|these|those|them|me|going|trying|looking)\b`)},
	{name: "preference/convention", kind: KindPreference, weight: 2.5,
		re: re(`\b(?:our|the|team|house|repo|project)\s+(?:convention|conventions|style|standard|rule|rules|policy|practice|norm|default|naming scheme|naming convention|guideline|guidelines|workflow|process)\s*(?::|\s(?:is|are|says|here is|here are|for)\b)|\brule of thumb\b|\bby convention\b|\bas a rule\b|\bthe rule (?:here )?is\b|\bby default\b|\bdefaults? to\b|\bstandard practice\b`)},
	{name: "preference/standing", kind: KindPreference, weight: 1.5,
		re: re(`\b(?:from now on|going forward|from here on|in the future|in future|henceforth|every time|each time|whenever|as a habit)\b`)},
	{name: "preference/zh", kind: KindPreference, weight: 2,
		re:     re(`我们(?:这边|团队|组)?(?:都|一般|通常|一直|统一|只|习惯)?(?:用|使用|采用|习惯用|写)|我(?:更)?(?:喜欢|偏好|习惯|倾向于?)|统一(?:用|使用|采用|成|为|走)|一律|默认(?:用|使用|是|为|走)?|请(?:用|使用|保持|始终|一直|统一|尽量|都)|尽量(?:用|使用|不要|别|保持)|(?:用|使用)[^，。,]{1,20}[，,]?\s*(?:不要用|别用|不用|而不是|而非)|规范是|惯例是|风格是|习惯是|按照惯例|(?:^|[，,。；;：:])\s*(?:以后|今后)|每次|统一|规矩|规定|规则是|要求是|(?:我们|我|团队|这边|咱们).{0,4}(?:一般|通常|一向|向来|习惯)`),
		unless: re(`试试|试一下|试一试|先用|暂用|用一下|用了一下`)},

	{name: "preference/zh-please", kind: KindPreference, weight: 2,
		re:     re(`请`),
		unless: re(`请(?:帮|问|稍|查|看|确认|提供|发|把|检查|重试|回复|告诉|运行|执行|修|改|生成|写|解释|分析|列出|给我|再|继续|尽快|及时|联系我|注意查收|参考|见|求|假|客)|申请|邀请|请求`)},

	// Environment.
	{name: "environment/value", kind: KindEnvironment, weight: 2,
		words:   wordSet(`is are lives live runs run hosted deployed located sits points listens served stored kept mounted exposed reachable available defined configured pinned goes go uses use stays stay remains remain`),
		phrases: []string{"'re on", "’re on", "'m on", "’m on", " = "},
		unless:  re(`^(?:it|it's|this|that|that's|there|here|these|those|which|i|you|context)\b|\b(?:was|were|used to be|had been|got|earlier|before|broke|broken|failed|this is for|tracked in|tracking)\b`),
		needs:   statesWhere},
	{name: "environment/zh", kind: KindEnvironment, weight: 2,
		re:    re(`(?:数据库|服务器|仓库|集群|域名|地址|端口|频道|群|分支|环境|版本|目录|路径|机器|主机|接口|网关|存储|桶|账号|队列|缓存|配置|日志|监控|文档|预发|生产|线上|ci)[^，。,]{0,12}(?:位于|地址是|在|是|为|跑在|部署在|托管在|放在|存放在|用的是|叫)`),
		needs: hasValue},
	{name: "environment/zh-address", kind: KindEnvironment, weight: 2,
		re:     re(`(?:地址|网址|域名|分机|邮箱|地点)(?:是|为|：|:|在)|位于|办公室在|仓库在|机房在|部署在|托管在`),
		unless: re(`^(?:这|那|它)|谁|哪`)},
	{name: "environment/zh-value", kind: KindEnvironment, weight: 2,
		re:     re(`^[^，。,]{1,16}?(?:是|在|为|叫|用的是|位于|放在|存放在|存在|放到|跑在|部署在)`),
		unless: re(`^(?:这|那|它|他|她|我|你)`),
		needs:  hanEnvironment},

	// Notes meant for later.
	{name: "note/label", kind: KindNote, weight: 2,
		re: re(`^(?:note|nb|n\.b\.|fyi|pro tip|tip|heads up|heads-up|for the record|for future reference|for reference|for context|keep in mind|bear in mind|worth noting|worth knowing|worth remembering|good to know|just so you know|important|reminder|remember|psa|gotcha|caveat|warning)\b\s*[:,—-]?`)},
	{name: "note/marker", kind: KindNote, weight: 2,
		re: re(`\b(?:note that|please note|keep in mind that|bear in mind that|remember that|don't forget|do not forget|worth noting that|worth remembering|good to know|for future reference|for the record|fyi|be aware|one thing to (?:be aware of|know|note|remember|keep in mind)|the thing to know|watch out for|beware)\b`)},
	{name: "note/recorded", kind: KindNote, weight: 2,
		re: re(`^(?:recorded|all recorded|noted|i've noted|i have noted|saved|logged|added to (?:the |your )?(?:notes|record|profile|account))\b.*?[:：—–-]|^(?:已记录|已记下|已记住|记下了|记住了|已备注|备注已添加|已保存|已登记)`)},
	{name: "note/zh", kind: KindNote, weight: 2,
		re: re(`^(?:注意|记住|备注|提醒|提示|补充一下|供参考|仅供参考|顺便提一下|顺便提一句|提一句|说明一下)|记住|别忘了|不要忘了|记得|供参考|留个底|记录一下|记一下|顺便提一句|需要注意|要注意|友情提示|温馨提示`)},
}

// Markers that strengthen a statement without saying its kind.
var (
	standingMarker = re(`\b(?:always|never|from now on|going forward|from here on|in the future|in future|henceforth|every time|each time|whenever|every (?:commit|release|pr|pull request|push|merge|deploy|deployment|change|request|sprint|week|day|morning|build|run)|all of our|all our|any time|anytime|permanently|must)\b|(?:^|[，,。；;：:])\s*(?:以后|今后)|始终|永远|一律|每次|任何时候|所有的?|必须|务必|禁止|严禁|统一|强制`)
	noteMarker     = re(`^(?:remember|note|nb|fyi|heads up|for the record|for future reference|keep in mind|important|psa|worth remembering)\b|\b(?:remember that|note that|please note|keep in mind)\b|^(?:记住|注意|备注|提醒)|记住|别忘了`)
)

// Vetoes: a statement matching one states no durable fact, whatever rule
// it also matches.
var (
	questionStart = re(`^(?:can|could|would|should|shall|does|did|is|are|was|were|will(?: [a-z]+)? (?:it|we|you|they|this|that|there|he|she|i)|what|why|how|who|whom|which|whose|have you|has anyone|any idea|anyone know|anybody know|wondering|i wonder|do you|do we|do i|is there|are there|whats|what's|hows|how's|wdyt|where (?:is|are|do|does|can|should)|when (?:is|are|do|does|can|will|should|did))\b`)
	questionHan   = re(`(?:吗|呢|么|嘛)[。！!.]?$|是不是|能不能|要不要|有没有|可不可以|会不会|对不对|为什么|为啥|怎么办|怎么样|怎么回事|多少|哪个|哪些|哪里|哪儿|几点|啥`)
	transient     = re(`\b(?:right now|for now|for the moment|at the moment|currently|for today|just now|so far|at this point|in this session|this session|this time|for this (?:one|time|task|test|ticket|pr|run|change|query|report|session|issue|bug|branch|call|demo|sprint)|this sprint|tomorrow|tonight's|in a minute|in a sec|eta|wip)\b|\byet[.!]?$`)
	transientWeak = re(`\b(?:scratch that|let me|let's (?:try|see|check|run|look|start|do|fix|rerun|debug|figure)|i'll|i will|i'm going to|i am going to|we're going to try|next step|next up|still (?:failing|broken|red|running|waiting|pending|down|flaky)|is (?:failing|broken|red|down|flaky|timing out|stuck|hanging)|are (?:failing|broken|red|down|flaky|timing out|stuck|hanging)|keeps? (?:failing|breaking|crashing)|in progress|i just|we just|just (?:ran|pushed|merged|deployed|fixed|tried)|yesterday|last night|last week|earlier today|this week|next week|this month|temporarily|today|tonight|this morning|this afternoon|this evening)\b`)
	transientHan  = re(`暂时|目前|这次|这一次|今天|今晚|刚才|刚刚|眼下|本次|这会儿`)
	transientHanW = re(`临时|这周|本周|下周|正在|还在|马上|待会|一会儿|稍后|先(?:看|试|跑|查|帮|把|处理|别管|这样)|接下来|下一步|挂了|报错了|失败了|现在|当前`)
	hedge         = re(`\b(?:maybe|perhaps|probably|possibly|i think|i guess|i suppose|i believe|not sure|unsure|might|seems|seem to|apparently|i wonder|could be|wondering|if i recall|iirc|i feel like|kind of|sort of)\b|可能|也许|大概|好像|似乎|不确定|不太确定|我猜|估计|应该是|我觉得`)
	chatter       = re(`^(?:sounds good|looks good|lgtm|no worries|no problem|np|good job|well done|nice work|never mind|nevermind|my bad)\b|\b(?:weird|strange|odd|ugh|annoying|frustrating|interesting|funny|crazy|awesome|amazing|lol|haha)\b|辛苦|哈哈|没问题|太好了|奇怪|麻烦你|谢了|再说吧|回头再说|以后再说`)
	injection     = re(`\b(?:ignore (?:all |any )?(?:previous|prior|above|earlier|the above|your)|disregard (?:all |any )?(?:previous|prior|above|your)|system prompt|you are now|new instructions|act as|jailbreak|developer mode|do anything now)\b|忽略(?:之前|以上|前面|所有|上述)|无视.{0,6}指令|系统提示`)
	// secretDisclosure is a statement whose point is a credential's value
	// ("the token is ghp_..."); "the key is stored in Vault" is a fact.
	secretAssignment = re(`[=:]\s*\[redacted:`)
	secretDisclosure = re(`\b(?:password|passwd|passphrase|token|api key|apikey|api-key|secret|credentials?|private key|access key|secret key|key|pat)s?\s*(?:is|are|=|:)\s`)
	// passwordValue is a password told, or a login told as "user / password".
	passwordValue = re(`\b(?:password|passwd|passphrase|passcode|pwd|pw)s?\s*(?:is|are|=|:)\s*\S+|\b(?:login|logins|creds|credentials|account|user ?/ ?pass(?:word)?)\s*(?:is|are|=|:)\s*\S+\s*/\s*\S+`)
	secretWhere   = re(`\b(?:password|passwd|passphrase|token|api key|apikey|api-key|secret|credentials?|private key|access key|secret key|pat)s?\s*(?:is|are)\s+(?:stored|kept|managed|rotated|available|in|under|at|on|only|never|read|loaded|injected|provided|set)\b`)
	secretHan     = re(`(?:密码|口令)\s*(?:是|为|=|:|：|给你|发你|发给你)|(?:密码|密钥|令牌|口令|token|key)[^，。]{0,4}(?:在这|如下|给你|发你)`)
	tokenHan      = re(`(?:密钥|令牌|token|key)\s*(?:是|为|=|:|：)\s*(?:\[redacted|[a-z0-9_-]{16,})`)
)

// task is a request for work now ("Please add retries to kv.go", "Fix the
// race in session.go"), not a standing rule; a standing marker ("always",
// "from now on") makes it one.
var taskLead = regexp.MustCompile(`^(?:(?:please|pls|kindly|can you|could you|would you|also|now|then|first)\s+)*`)

var taskVerbs = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Split(`add|fix|make|implement|write|create|update|change|refactor|rename|remove|delete|move|migrate|validate|check|look|investigate|debug|run|rerun|test|review|paginate|expose|publish|replace|stream|document|explain|summari[sz]e|draft|send|generate|build|deploy|set up|setup|configure|install|upgrade|bump|help|find|search|show|list|tell|give|prepare|compute|calculate|analy[sz]e|plot|chart|pull|export|import|load|clean up|clean|merge|rebase|revert|open|close|file|try|retry|restart|rewrite|split|wrap|handle|return`, "|") {
		m[w] = true
	}
	return m
}()

// isTask reports whether a lower-cased statement asks for work: its first
// word, after "please", "can you", "also" ..., is a verb of work.
func isTask(lower string) bool {
	rest := lower[len(taskLead.FindString(lower)):]
	word, _, _ := strings.Cut(rest, " ")
	word = strings.TrimRight(word, ",.:;!")
	if word == "set" || word == "clean" {
		next, _, _ := strings.Cut(strings.TrimPrefix(rest, word+" "), " ")
		return taskVerbs[word+" "+next] || word == "clean"
	}
	if next, _, _ := strings.Cut(strings.TrimPrefix(rest, word+" "), " "); next == "is" || next == "are" || next == "was" {
		return false // "help center is ...": the word is a noun
	}
	return taskVerbs[word]
}

// asksForWork reports whether a statement, or a clause of it after a
// semicolon, asks for work ("X is flaky on CI; please find out why and fix
// it"): the clause before it is then the task's context, not a fact.
func asksForWork(lower string) bool {
	for part := range strings.FieldsFuncSeq(lower, func(r rune) bool { return r == ';' || r == '；' }) {
		if isTask(strings.TrimSpace(part)) {
			return true
		}
	}
	return false
}

// vetoed reports why a statement states no durable fact ("" when it may).
func vetoed(s statement, raw string) string {
	last := strings.TrimRight(s.text, ` "'”’)]）】`)
	switch {
	case strings.HasSuffix(last, "?") || strings.HasSuffix(last, "？"):
		return "question"
	case s.matchLower(questionStart) && !strings.HasPrefix(s.lower, "do not") && !strings.HasPrefix(s.lower, "don't"):
		return "question"
	case s.cjk && s.matchText(questionHan):
		return "question"
	case s.matchLower(injection):
		return "injection"
	case s.matchLower(chatter) || (len(raw) < 40 && chatter.MatchString(strings.ToLower(raw))):
		return "chatter"
	case s.matchLower(hedge):
		return "hedge"
	case asksForWork(s.lower) && !s.matchLower(standingMarker):
		return "task"
	case s.matchLower(transient) || s.cjk && s.matchText(transientHan):
		return "transient"
	case disclosesSecret(s):
		return "secret"
	}
	return ""
}

// disclosesSecret reports whether a statement's point is a credential's
// value: a redacted secret after "token is", "key:", 密码是 ..., or any
// password value. Where a secret is kept ("stored in Vault") is a fact.
func disclosesSecret(s statement) bool {
	if s.matchLower(secretWhere) {
		return false
	}
	if s.matchLower(passwordValue) {
		return true
	}
	if s.cjk && (secretHan.MatchString(s.lower) || tokenHan.MatchString(s.lower)) && !strings.Contains(s.lower, "存") {
		return true
	}
	return strings.Contains(s.lower, "[redacted:") && (secretDisclosure.MatchString(s.lower) || secretAssignment.MatchString(s.lower))
}

// weakTransient reports whether a statement reads as progress or a plan
// ("let me", "I'll", "is failing", 正在), which only a decision or a
// standing marker outweighs.
func weakTransient(s statement) bool {
	return s.matchLower(transientWeak) || s.cjk && s.matchText(transientHanW)
}
