package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Question types of the dialog set.
const (
	// QSingle asks for one fact stated once, in other words.
	QSingle = "single"
	// QTemporal asks when something happened, or what was decided at a
	// time ("last week", "in spring"); the evidence is the turn that said
	// it, whose session date answers the question.
	QTemporal = "temporal"
	// QMultiHop needs two turns: one names something, the other says
	// what happened to it.
	QMultiHop = "multi_hop"
)

// DialogTurn is one turn of a dialog, stored as one record.
type DialogTurn struct {
	Key     string
	Content string
	// At is the session's date; the record's EffectiveFrom.
	At time.Time
}

// DialogQuestion is asked after the whole dialog. Evidence holds the
// indexes (in the conversation's Turns) of every turn it needs.
type DialogQuestion struct {
	Text     string
	Type     string
	Lang     string // "en" or "zh"
	Evidence []int
}

// Conversation is one Scope's dialog: a few hundred turns over many
// sessions, mostly small talk.
type Conversation struct {
	Name      string
	Turns     []DialogTurn
	Questions []DialogQuestion
}

// DialogSet is the harder development set: long multi-session chats between
// two people, one record per turn, where each answer is said once, in
// passing, and asked about later in other words.
type DialogSet struct {
	Conversations []Conversation
}

// dialogFact is a story line: the turns stating it (two for a multi-hop
// question, said in different sessions), turns that talk about the same
// things without answering (distractors), and the question.
type dialogFact struct {
	stated      []string
	distractors []string
	question    string
	qtype       string
}

// dialogScript is one conversation's material.
type dialogScript struct {
	name      string
	lang      string
	speakers  [2]string
	sessions  int
	turns     int // per session
	facts     []dialogFact
	smallTalk []string
}

// The English friends' chat. Answers share few words with the questions;
// names, "trip", "work" and the like recur all over the small talk.
var friendsEN = dialogScript{
	name: "friends-en", lang: "en", speakers: [2]string{"Mara", "Jonas"}, sessions: 12, turns: 28,
	facts: []dialogFact{
		{stated: []string{"oh, we finally picked up the puppy from the shelter yesterday, a little beagle"},
			distractors: []string{"my neighbour's dog barked all night again"},
			question:    "When did Mara adopt her dog?", qtype: QTemporal},
		{stated: []string{"I signed up for pottery classes on Thursday evenings, first one was a mess"},
			distractors: []string{"thursday evenings are always so busy for me"},
			question:    "What hobby did Mara start?", qtype: QSingle},
		{stated: []string{"my brother Felix just opened a bakery in Ghent"},
			distractors: []string{"Felix says hi by the way"},
			question:    "What business did Jonas's brother start?", qtype: QSingle},
		{stated: []string{"my sister Lena got the offer from the architecture firm!", "Lena accepted, she's moving to Porto in May"},
			question: "Which city is Jonas's sister moving to?", qtype: QMultiHop},
		{stated: []string{"we booked the cabin by the lake for the long weekend, decided last night"},
			distractors: []string{"that lake trip two summers ago was so cold", "I need a weekend off so badly"},
			question:    "What did we decide about the long weekend?", qtype: QTemporal},
		{stated: []string{"I'm allergic to shellfish, so no paella for me sadly"},
			distractors: []string{"the seafood place downtown closed"},
			question:    "What food can't Mara eat?", qtype: QSingle},
		{stated: []string{"ran my first half marathon this morning, 2 hours 5 minutes!"},
			distractors: []string{"my knees hurt after running", "morning runs are the best"},
			question:    "How long did it take Jonas to finish the race?", qtype: QSingle},
		{stated: []string{"my grandmother turns ninety on the 14th, big family dinner"},
			distractors: []string{"dinner at my parents' was nice"},
			question:    "When is the birthday of Mara's grandma?", qtype: QTemporal},
		{stated: []string{"the new job starts in October, I'll be doing data engineering at a bank"},
			distractors: []string{"work has been so stressful lately", "my boss wants the report by Monday"},
			question:    "What will Jonas work on in his next position?", qtype: QSingle},
		{stated: []string{"I sold the old Volvo and bought an e-bike instead"},
			distractors: []string{"traffic was horrible today"},
			question:    "What happened to Mara's car?", qtype: QSingle},
		{stated: []string{"our book club is reading Middlemarch this month", "I think I'll finally finish Middlemarch on the train home"},
			question: "What is the book club reading, and where does Mara read it?", qtype: QMultiHop},
		{stated: []string{"I moved into the flat on Keller Street last Saturday"},
			distractors: []string{"the street fair is on this saturday"},
			question:    "When did Jonas change apartments?", qtype: QTemporal},
		{stated: []string{"we named the beagle Pepper, she chews everything", "the vet said Pepper needs surgery on her hip"},
			question: "What does Mara's dog need?", qtype: QMultiHop},
		{stated: []string{"I'm learning Portuguese with an app, twenty minutes a day"},
			distractors: []string{"I downloaded a new podcast app"},
			question:    "Which language is Jonas studying?", qtype: QSingle},
	},
	smallTalk: []string{
		"haha yes exactly", "how was your weekend?", "pretty good, just relaxed mostly", "ugh, Monday again",
		"did you watch the game last night?", "no, I fell asleep early", "what are you up to today?",
		"just work, the usual", "we should get coffee soon", "sounds good to me", "lol", "omg really?",
		"I know right", "how's the family?", "everyone's fine, thanks for asking", "the weather is so nice today",
		"it's been raining all week here", "I'm so tired", "same here honestly", "talk later?", "sure, bye!",
		"good morning!", "good night", "that's so funny", "wait what happened?", "long story, I'll tell you later",
		"are you free on Friday?", "maybe, let me check", "I made pasta for dinner", "yum, what kind?",
		"just tomato and basil", "did you see the news?", "yeah, crazy times", "how's work going?",
		"busy but ok", "I need a vacation", "don't we all", "my phone is dying", "thanks so much!",
		"no problem", "remember that trip we did years ago?", "of course, best trip ever", "miss you!",
		"what did you do yesterday?", "nothing much, cleaned the house", "I think I'm getting a cold",
		"take care of yourself", "what time is it there?", "almost midnight", "see you soon",
	},
}

// The English team chat.
var teamEN = dialogScript{
	name: "team-en", lang: "en", speakers: [2]string{"Ana", "Raj"}, sessions: 10, turns: 30,
	facts: []dialogFact{
		{stated: []string{"after the call we agreed to drop MongoDB and go with Postgres for the ledger"},
			distractors: []string{"the database call ran long again", "can you send me the ledger numbers?"},
			question:    "Which datastore did we choose last week for the accounting service?", qtype: QTemporal},
		{stated: []string{"the client asked us to push the launch to the 3rd of March"},
			distractors: []string{"launch prep meeting moved to 3pm"},
			question:    "When is the release date now?", qtype: QTemporal},
		{stated: []string{"Priya takes over the on-call rotation from next Monday"},
			distractors: []string{"on-call was quiet this week"},
			question:    "Who will be paged for incidents starting next week?", qtype: QSingle},
		{stated: []string{"finance signed off 40k for the observability tooling"},
			distractors: []string{"finance wants the expense reports by Friday"},
			question:    "How much money did we get for monitoring?", qtype: QSingle},
		{stated: []string{"the vendor's API rate limit is 300 requests per minute"},
			distractors: []string{"the vendor demo was boring"},
			question:    "How many calls can we make to their service?", qtype: QSingle},
		{stated: []string{"staging moved to the Frankfurt region yesterday"},
			distractors: []string{"staging is flaky again"},
			question:    "Where is the test environment hosted?", qtype: QSingle},
		{stated: []string{"billing revamp kickoff is on the 12th", "Tomás is the new PM for the billing revamp"},
			question: "Who runs the project that kicks off on the 12th?", qtype: QMultiHop},
		{stated: []string{"we decided to rewrite the importer in Go instead of patching the Python one"},
			distractors: []string{"the importer crashed twice today", "python upgrade is done"},
			question:    "What did the team decide about the ingestion script?", qtype: QTemporal},
		{stated: []string{"security review found that tokens never expired, fixed in 2.4.1"},
			distractors: []string{"security training is mandatory this quarter"},
			question:    "Which version fixed the session credential problem?", qtype: QSingle},
		{stated: []string{"the design system lives in the Figma file called Atlas", "Atlas was updated with the new dark colours"},
			question: "Where are the new dark theme colours?", qtype: QMultiHop},
		{stated: []string{"customer churn dropped to 2.1 percent after the onboarding change"},
			distractors: []string{"onboarding docs need an update"},
			question:    "What happened to the rate of customers leaving?", qtype: QSingle},
	},
	smallTalk: []string{
		"morning!", "standup in 5", "can you review my PR?", "sure, after lunch", "thanks!", "np",
		"build is red again", "fixed, sorry", "lunch?", "give me ten minutes", "coffee break?",
		"I'm out tomorrow afternoon", "ok, noted", "who's joining the retro?", "me", "running late, start without me",
		"the wifi is terrible today", "can we move the meeting?", "sure, what time works?", "after 2 is fine",
		"great work on the demo", "thanks, team effort", "anyone seen the charger?", "it's in the meeting room",
		"happy Friday!", "have a nice weekend", "how was the weekend?", "good, hiked a bit", "I'm on it",
		"let me check and get back to you", "sounds good", "+1", "agreed", "let's discuss tomorrow",
		"the deploy went fine", "I updated the ticket", "done", "quick question about the sprint",
		"sprint planning is at 10", "the coffee machine is broken again",
	},
}

// The Chinese friends' chat.
var friendsZH = dialogScript{
	name: "friends-zh", lang: "zh", speakers: [2]string{"小林", "阿杰"}, sessions: 10, turns: 26,
	facts: []dialogFact{
		{stated: []string{"跟你说，我们上周末终于把那只橘猫领回家了"},
			distractors: []string{"楼下那只猫又在叫了"},
			question:    "小林什么时候收养了宠物？", qtype: QTemporal},
		{stated: []string{"我报了一个周四晚上的陶艺课，第一节课做得一团糟"},
			distractors: []string{"周四晚上总是特别忙"},
			question:    "小林开始了什么新爱好？", qtype: QSingle},
		{stated: []string{"我妹妹拿到了那家建筑事务所的录用通知", "她决定五月份搬去杭州"},
			question: "阿杰的妹妹要搬到哪个城市？", qtype: QMultiHop},
		{stated: []string{"昨晚商量好了，国庆假期去湖边那个小木屋"},
			distractors: []string{"去年去湖边冷死了", "好想放个长假"},
			question:    "我们决定国庆去哪里玩？", qtype: QTemporal},
		{stated: []string{"我对海鲜过敏，所以那家海鲜饭我吃不了"},
			distractors: []string{"市中心那家餐厅关门了"},
			question:    "小林不能吃什么食物？", qtype: QSingle},
		{stated: []string{"今天早上跑完了第一个半程马拉松，两小时五分钟"},
			distractors: []string{"跑完步膝盖有点疼"},
			question:    "阿杰比赛用了多长时间？", qtype: QSingle},
		{stated: []string{"奶奶十四号九十大寿，全家要一起吃饭"},
			distractors: []string{"昨天在爸妈家吃的饭"},
			question:    "小林的外婆生日是哪天？", qtype: QTemporal},
		{stated: []string{"新工作十月开始，在银行做数据工程"},
			distractors: []string{"最近工作压力好大"},
			question:    "阿杰下一份工作做什么？", qtype: QSingle},
		{stated: []string{"我把旧车卖了，买了一辆电动自行车"},
			distractors: []string{"今天堵车太严重了"},
			question:    "小林的汽车怎么样了？", qtype: QSingle},
		{stated: []string{"我们读书会这个月读《红楼梦》", "我打算在回家的地铁上把《红楼梦》读完"},
			question: "读书会读的书小林在哪里读？", qtype: QMultiHop},
	},
	smallTalk: []string{
		"哈哈哈是的", "周末过得怎么样？", "还不错，主要就是休息", "又到周一了", "昨晚的比赛你看了吗？",
		"没有，我睡得很早", "今天干嘛呢？", "上班呗，老样子", "改天一起喝咖啡吧", "好呀", "真的假的？",
		"我知道", "家里人都好吗？", "都挺好的，谢谢关心", "今天天气真好", "这边下了一周的雨", "我好累",
		"我也是", "晚点聊？", "好的，拜拜", "早上好", "晚安", "太好笑了", "等等，发生什么了？",
		"说来话长，回头告诉你", "周五有空吗？", "可能有，我看看", "我晚饭做了意面", "什么口味的？",
		"番茄罗勒的", "你看新闻了吗？", "是啊，太离谱了", "工作怎么样？", "忙，但还行", "我需要放个假",
		"谁不是呢", "手机快没电了", "太感谢了", "不客气", "还记得我们那次旅行吗？", "当然，最棒的一次",
		"想你了", "昨天干了什么？", "没干啥，打扫了房间", "我好像感冒了", "照顾好自己",
	},
}

// dialogStart is the date of every conversation's first session; sessions
// are a week apart.
var dialogStart = time.Date(2025, 9, 1, 18, 0, 0, 0, time.UTC)

// NewDialogSet builds the three conversations deterministically from seed.
// Each fact's turns are said once, in passing, in a session chosen at
// random (for a multi-hop fact, its two turns in two different sessions);
// distractors land elsewhere; everything else is small talk, said by the
// two speakers in turn.
func NewDialogSet(seed uint64) DialogSet {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var set DialogSet
	for _, sc := range []dialogScript{friendsEN, teamEN, friendsZH} {
		set.Conversations = append(set.Conversations, buildConversation(r, sc))
	}
	return set
}

func buildConversation(r *rand.Rand, sc dialogScript) Conversation {
	total := sc.sessions * sc.turns
	type placed struct {
		text string
		fact int // -1 for a distractor
		part int
	}
	at := make(map[int]placed)
	// free picks an unused position in [lo, hi) spoken by speaker by (the
	// two speakers alternate; -1 means either).
	free := func(lo, hi, by int) int {
		for {
			p := lo + r.IntN(hi-lo)
			if _, taken := at[p]; !taken && (by < 0 || p%sc.turns%2 == by) {
				return p
			}
		}
	}
	evidence := make([][]int, len(sc.facts))
	for fi, f := range sc.facts {
		// The speaker a question names is the one who said it ("Mara's
		// dog", "Jonas's sister": Jonas says "my sister").
		by := -1
		for i, name := range sc.speakers {
			if strings.Contains(f.question, name) {
				by = i
			}
		}
		// Multi-hop parts go to two different sessions, the first earlier.
		s0 := r.IntN(sc.sessions - 1)
		for pi, text := range f.stated {
			s := s0
			if pi > 0 {
				s = s0 + 1 + r.IntN(sc.sessions-1-s0)
			}
			p := free(s*sc.turns, (s+1)*sc.turns, by)
			at[p] = placed{text: text, fact: fi, part: pi}
			evidence[fi] = append(evidence[fi], p)
		}
		for _, d := range f.distractors {
			at[free(0, total, -1)] = placed{text: d, fact: -1}
		}
	}
	conv := Conversation{Name: sc.name}
	for p := 0; p < total; p++ {
		s, t := p/sc.turns, p%sc.turns
		text := sc.smallTalk[r.IntN(len(sc.smallTalk))]
		if pl, ok := at[p]; ok {
			text = pl.text
		}
		sep := ": "
		if sc.lang == "zh" {
			sep = "："
		}
		conv.Turns = append(conv.Turns, DialogTurn{
			Key:     fmt.Sprintf("session %02d turn %03d", s+1, t+1),
			Content: sc.speakers[t%2] + sep + text,
			At:      dialogStart.AddDate(0, 0, 7*s),
		})
	}
	for fi, f := range sc.facts {
		conv.Questions = append(conv.Questions, DialogQuestion{Text: f.question, Type: f.qtype, Lang: sc.lang, Evidence: evidence[fi]})
	}
	return conv
}
