package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Turn is one conversation turn, stored as one memory record.
type Turn struct {
	Session int
	Key     string
	Content string
}

// Question asks, in a later session, about a fact one turn stated.
type Question struct {
	Text string
	// Answer is the index in QualitySet.Turns of the turn stating the fact.
	Answer  int
	Chinese bool
}

// QualitySet is a synthetic multi-session conversation: facts are stated
// once, in passing, among small talk and other facts about the same
// subjects; each question asks about one fact later, in other words.
type QualitySet struct {
	Turns     []Turn
	Questions []Question
}

// attribute is something a fact can be about: how a turn states it, and
// how a question asks for it (a paraphrase sharing few or no words).
type attribute struct {
	stated []string // "%s" is the subject, "%v" the value
	asked  []string // "%s" is the subject
	values []string
}

var enAttributes = []attribute{
	{
		stated: []string{"by the way, the %s database listens on port %v now", "heads up: %s's postgres moved to port %v"},
		asked:  []string{"which port should I use to connect to the %s db?", "what port is %s's database on?"},
		values: []string{"5433", "6432", "15432", "5544", "7000"},
	},
	{
		stated: []string{"we deployed %s to %v last week", "%s runs in %v since the migration"},
		asked:  []string{"in which region is %s hosted?", "where does %s run these days?"},
		values: []string{"eu-west-1", "us-east-2", "ap-southeast-1", "the Frankfurt datacenter", "the Oslo datacenter"},
	},
	{
		stated: []string{"%v is on call for %s this week", "this week the pager for %s goes to %v"},
		asked:  []string{"who should I page if %s breaks?", "who is responsible for %s incidents right now?"},
		values: []string{"Priya", "Marcus", "Chen Wei", "Olga", "Tomás"},
	},
	{
		stated: []string{"the %s release is planned for %v", "we ship %s on %v if QA signs off"},
		asked:  []string{"when is %s going out?", "what's the launch date for %s?"},
		values: []string{"March 3rd", "the first Monday of April", "June 12", "end of the quarter", "next Tuesday"},
	},
	{
		stated: []string{"the budget for %s is %v for this year", "finance approved %v for %s"},
		asked:  []string{"how much money do we have for %s?", "what did finance give %s?"},
		values: []string{"40k euros", "$120,000", "15k dollars", "half a million yen", "90 thousand euros"},
	},
	{
		stated: []string{"backups of %s run %v", "%s gets backed up %v"},
		asked:  []string{"how often do we back up %s?", "what is the backup schedule of %s?"},
		values: []string{"every six hours", "nightly at 2am", "once a week on Sundays", "every hour", "twice a day"},
	},
	{
		stated: []string{"%s is written in %v", "the %s codebase is mostly %v"},
		asked:  []string{"what language is %s implemented in?", "which programming language does %s use?"},
		values: []string{"Rust", "Go", "Kotlin", "TypeScript", "Elixir"},
	},
	{
		stated: []string{"the staging environment for %s lives at %v", "you can try %s on staging at %v"},
		asked:  []string{"what's the test url for %s?", "where can I preview %s before production?"},
		values: []string{"staging.internal/alpha", "preview.corp/beta", "test-box-7", "qa.lab/ci", "sandbox-12"},
	},
}

var zhAttributes = []attribute{
	{
		stated: []string{"顺便说一下，%s的数据库端口改成了%v", "%s的数据库现在监听%v端口"},
		asked:  []string{"连接%s数据库用哪个端口？", "%s的库是哪个端口"},
		values: []string{"5433", "6432", "15432", "7000"},
	},
	{
		stated: []string{"%s已经部署到%v了", "%s现在跑在%v"},
		asked:  []string{"%s部署在哪个机房？", "%s在哪里运行"},
		values: []string{"上海机房", "北京机房", "深圳机房", "新加坡机房"},
	},
	{
		stated: []string{"这周%s的值班负责人是%v", "%v这周负责%s的告警"},
		asked:  []string{"%s出问题了该找谁？", "谁在负责%s的值班"},
		values: []string{"王磊", "李娜", "张伟", "刘洋"},
	},
	{
		stated: []string{"%s计划在%v发布", "%s定在%v上线"},
		asked:  []string{"%s什么时候上线？", "%s的发布时间是哪天"},
		values: []string{"三月三日", "四月初", "六月十二日", "季度末"},
	},
	{
		stated: []string{"%s今年的预算是%v", "财务给%s批了%v"},
		asked:  []string{"%s有多少经费？", "%s能花多少钱"},
		values: []string{"四十万元", "十二万美元", "八十万元", "五万欧元"},
	},
	{
		stated: []string{"%s的备份%v做一次", "%s每次备份间隔是%v"},
		asked:  []string{"%s多久备份一次？", "%s的备份频率是多少"},
		values: []string{"每六小时", "每天凌晨两点", "每周日", "每小时"},
	},
}

var (
	smallTalk = []string{
		"good morning everyone, coffee machine is fixed",
		"can someone review my pull request when you have a minute?",
		"I'll be out on Friday afternoon",
		"thanks, that worked",
		"let's move the retro to Thursday",
		"the build is green again",
		"who broke the linter? just kidding, it was me",
		"lunch at noon?",
		"I updated the onboarding doc",
		"sorry, wrong channel",
		"can we keep the meeting short today?",
		"nice work on the demo yesterday",
	}
	zhSmallTalk = []string{
		"大家早上好，咖啡机修好了",
		"谁有空帮我看一下代码评审？",
		"我周五下午请假",
		"谢谢，问题解决了",
		"复盘会改到周四吧",
		"构建又恢复正常了",
		"中午一起吃饭吗？",
		"我更新了入职文档",
	}
	zhSubjects = []string{"星河", "天枢", "青鸟", "北辰", "银杏", "海燕", "昆仑", "云雀", "赤兔", "玄武"}
)

// positional makes a template's verbs explicit: %s is the subject and %v
// the value, in whichever order the sentence names them.
var positional = strings.NewReplacer("%s", "%[1]s", "%v", "%[2]v")

// NewQualitySet builds the conversation deterministically from seed:
// sessions turns long; roughly one English subject in every five turns and
// one Chinese subject in every eight, each given several facts.
func NewQualitySet(seed uint64, sessions, turnsPerSession int) QualitySet {
	r := rand.New(rand.NewPCG(seed, seed+1))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	enSubjects := entityNames(4000)[1000:] // rarer names than the latency corpus' favourites
	type fact struct {
		stated, asked string
		chinese       bool
	}
	// Facts: each English subject gets 3 attributes, each Chinese one 3.
	var facts []fact
	nEn := sessions * turnsPerSession / 10
	for i := 0; i < nEn; i++ {
		subj := enSubjects[i*7%len(enSubjects)]
		for _, ai := range r.Perm(len(enAttributes))[:3] {
			a := enAttributes[ai]
			val := pick(a.values)
			facts = append(facts, fact{
				stated: fmt.Sprintf(positional.Replace(pick(a.stated)), subj, val),
				asked:  fmt.Sprintf(pick(a.asked), subj),
			})
		}
	}
	nZh := min(len(zhSubjects), sessions*turnsPerSession/16)
	for i := 0; i < nZh; i++ {
		subj := zhSubjects[i]
		for _, ai := range r.Perm(len(zhAttributes))[:3] {
			a := zhAttributes[ai]
			val := pick(a.values)
			facts = append(facts, fact{
				stated:  fmt.Sprintf(positional.Replace(pick(a.stated)), subj, val),
				asked:   fmt.Sprintf(pick(a.asked), subj),
				chinese: true,
			})
		}
	}
	// Turns: facts in random order, spread over the sessions among small
	// talk; questions come from sessions after the fact's.
	order := r.Perm(len(facts))
	total := sessions * turnsPerSession
	slots := r.Perm(total)[:len(facts)]
	factAt := make(map[int]int, len(facts))
	for i, s := range slots {
		factAt[s] = order[i]
	}
	var qs QualitySet
	for s := 0; s < sessions; s++ {
		for t := 0; t < turnsPerSession; t++ {
			pos := s*turnsPerSession + t
			turn := Turn{Session: s, Key: fmt.Sprintf("session %02d turn %03d", s, t)}
			if fi, ok := factAt[pos]; ok {
				f := facts[fi]
				turn.Content = f.stated
				qs.Questions = append(qs.Questions, Question{Text: f.asked, Answer: len(qs.Turns), Chinese: f.chinese})
			} else if r.IntN(4) == 0 {
				turn.Content = pick(zhSmallTalk)
			} else {
				turn.Content = pick(smallTalk)
			}
			qs.Turns = append(qs.Turns, turn)
		}
	}
	return qs
}
