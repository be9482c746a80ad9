package memorytools

import (
	"regexp"
	"strings"
)

// The safe-side rules. The built-in detector runs only after a write
// failed, so a clause the narrow rules in claims.go leave alone is read
// once more, broadly: any completed, passive or promised act of saving,
// recording, noting, archiving, logging or remembering, with or without a
// memory noun, is a claim unless it is negated, asked, offered, conditional
// or aimed at an explicit non-memory target.
var (
	// enBroadDone is a storing verb as a completed or passive act.
	enBroadDone = regexp.MustCompile(`\b(?:saved|stored|recorded|noted|logged|archived|persisted|remembered|memori[sz]ed|bookmarked|jotted|retained|catalogu?ed|documented|registered|filed away|on record|on file|written down|wrote down|put down|noted down|set down|taken down|took down|kept (?:a record|track|note|notes|it|that|this)|made (?:a |one |the )?(?:quick |short |little |mental )?(?:note|record|entry)|took (?:a |one )?(?:note|notes)|taken (?:a )?note|locked in|filed)\b`)
	// enBroadWill is a storing verb promised for later.
	enBroadWill = regexp.MustCompile(`\b(?:i'll|i will|we'll|we will|i'm going to|i am going to|we're going to|gonna|i shall|will)\s+(?:\w+\s+){0,3}?(?:save|store|record|note|log|archive|persist|remember|memori[sz]e|bookmark|retain|keep track|keep a record|keep (?:it|that|this) (?:on file|on record|in mind)|know|recall|use (?:it|that|this) (?:from now on|going forward|next time|in future))\b`)
	// enBroadLater is "for future sessions", "from now on" and the like
	// with a first-person or "it" subject: a claim by implication.
	enBroadLater   = regexp.MustCompile(`\bfor (?:all )?(?:future|next|later|upcoming|subsequent) (?:sessions?|conversations?|chats?|turns?|reference|use|runs?|requests?|time)\b|\b(?:from now on|going forward|moving forward|next time|in future (?:sessions?|conversations?|chats?)|in the future|for later|for next time|for good|permanently)\b`)
	enBroadSubject = regexp.MustCompile(`\b(?:i|i'll|i've|i'm|i'd|we|we'll|we've|me|my|it|it's|it is|that|that's|this|these|those|got it|noted|done|all set|okay|ok|sure)\b`)
	// enBroadBlock keeps general statements about how software behaves
	// and conditional clauses out.
	enBroadBlock = regexp.MustCompile(`\b(?:if|once|when|whenever|whether|unless|until|after|before|automatically|by default|always|usually|typically|normally|periodically|each|every|should|would|could|might|may|must|need to|needs to|can|let's|let us|you|you're|you've|you'll)\b`)
	// enBroadHabit is how something behaves in general, not what was done.
	enBroadHabit    = regexp.MustCompile(`\b(?:automatically|by default|always|usually|typically|normally|periodically|every|each|per (?:request|run|day|hour)|on (?:every|each) \w+|for (?:\d+|a|one|two|three|several|many) (?:seconds?|minutes?|hours?|days?|weeks?|months?|years?))\b`)
	enBroadSubject3 = regexp.MustCompile(`^(?:the |a |an |this |our |my |their |his |her )?(?:he|she|they|someone|somebody|people|users?|customers?|clients?|logs?|errors?|events?|metrics?|colleagues?|manager|developers?|browser|server|system|service|app|application|function|method|api|library|framework|sdk|tool|script|job|process|compiler|git|logger|kernel|os|editor|ide)\b`)
	// enBroadTarget is an explicit non-memory place the act is aimed at.
	enBroadTarget = regexp.MustCompile(`\b(?:in|to|into|on|onto|inside|within|under|at|as|from|via|through)\s+(?:(?:the|a|an|my|our|your|its|this|that|their|new|shared|local|remote|same|separate|main|project's|team's|\w+'s)\s+){0,3}` + broadNonMem)
	enBroadObject = regexp.MustCompile(`^\S+(?:\s+(?:down|away|up))?\s+(?:(?:the|a|an|my|our|your|its|their|new|updated|shared|local|\w+'s)\s+){0,2}` + broadNonMem)
	enMadeNote    = regexp.MustCompile(`\b((?:made|make|making|took|taken|jotted down) (?:a |one )?(?:quick |short |little |mental )?note) that\b`)
	enNotedDone   = regexp.MustCompile(`\b((?:has|have|had) been|(?:is|are|was|were) (?:now|all|already)) noted\b`)
	enNoteThat    = regexp.MustCompile(`\b((?:i|i'll|i will|we|we'll|we will|i've|i have|i'm going to|i am going to)(?:\s+(?:also|just|now|already|quickly))?) note that\b`)
	enMindVerb    = regexp.MustCompile(`\b(?:on file|on record|in mind|jotted|remember|remembered|memori[sz]ed?|know|recall|noted|note|made|took|taken|retained|retain)\b`)
	enMediaRecord = regexp.MustCompile(`\brecord(?:ed|ing)?\b.*\b(?:video|audio|meeting|call|demo|podcast|song|track|screen|screencast|webinar|session recording|voice|episode|album|interview|talk|lecture)s?\b|\b(?:video|audio|meeting|call|demo|podcast|song|screen|webinar|interview|talk|lecture)s? (?:was|were|is|are|has been|have been|got) recorded\b`)
	enAck         = regexp.MustCompile(`^(?:(?:ok|okay|sure|great|perfect|alright|yes|yep|yeah|got it|thanks|thank you)\s+)*(?:done|all done|all set|got it|sorted|taken care of|consider it done|will do|on it|noted|saved|stored|recorded|remembered)(?:\s+(?:thanks|thank you|for you|now))*$`)
)

// broadNonMem is enNonMemTarget with the output streams.
var broadNonMem = `(?:stderr|stdout|console|terminal|syslog|journald|editor|ide|browser|object storage|` + enNonMemTarget.String()[5:]

// judgeBroadEnglish reads one folded English clause with the safe-side
// rules.
func judgeBroadEnglish(cl string) clauseVerdict {
	cl = enCourtesy.ReplaceAllString(cl, " ")
	cl = enTechMemory.ReplaceAllString(cl, " ram ")
	cl = enMadeNote.ReplaceAllString(cl, "$1 of that")
	cl = enNotedDone.ReplaceAllString(cl, "$1 memorized")
	cl = enNoteThat.ReplaceAllString(cl, "$1 record that")
	cl = enNoteCompound.ReplaceAllString(cl, " doc ")
	cl = strings.TrimSpace(cl)
	loc := enBroadWill.FindStringIndex(cl)
	if d := enBroadDone.FindStringIndex(cl); d != nil && (loc == nil || d[0] < loc[0]) {
		loc = d
	}
	if loc == nil {
		if l := enBroadLater.FindStringIndex(cl); l != nil && enBroadSubject.MatchString(cl) {
			loc = l
		}
	}
	if loc == nil {
		return clauseNone
	}
	if enNegation.MatchString(cl[:loc[1]]) || enFailWord.MatchString(cl) {
		return clauseFailure
	}
	if enBroadHabit.MatchString(cl) {
		return clauseNone
	}
	if enNotClaim.MatchString(cl[:loc[0]]) || enOffer.MatchString(cl) || enBroadBlock.MatchString(cl[:loc[0]]) || enBroadSubject3.MatchString(cl) {
		return clauseNone
	}
	if enMediaRecord.MatchString(cl) {
		return clauseNone
	}
	if (enBroadTarget.MatchString(cl[loc[0]:]) || enBroadObject.MatchString(cl[loc[0]:])) && !strings.Contains(cl, "memor") && !enBroadLater.MatchString(cl) && !enMindVerb.MatchString(cl[loc[0]:loc[1]]) {
		return clauseNone
	}
	if enTechContext.MatchString(cl) && !enPersonal.MatchString(cl) && !enBroadLater.MatchString(cl) && !enMindVerb.MatchString(cl[loc[0]:loc[1]]) {
		return clauseNone
	}
	return clauseClaim
}

var (
	// cjkBroadAct is saving, archiving, recording or remembering in
	// Chinese or Japanese, with or without a memory noun.
	cjkBroadAct = regexp.MustCompile(`保存|存档|存檔|归档|歸檔|存储|儲存|储存|存好|存下|存入|存起来|存起來|存了|存上|记录|記錄|记下|記下|记住|記住|记好|记着|牢记|铭记|登记|备忘|收藏|留存|保留|留档|记在|记到|覚え|記憶|メモ|控え|保管|書き留め|アーカイブ|記録|登録|残し|残して|保存し|セーブ|覚えて`)
	// cjkBroadDone marks the act as completed, lasting or promised.
	cjkBroadDone = regexp.MustCompile(`已|了|成功|好了|下来|下來|完毕|完成|妥|会|會|将|將|以后|以後|下次|今后|今後|ました|ます|ておき|ておきます|てあります|ています|てある|てる|とき|といた|とく|済|完了|次回|以降|これから`)
	// cjkBroadBlock is a question, offer, request, conditional or another
	// person as the subject.
	cjkBroadBlock = regexp.MustCompile(`\d+\s*(?:天|日間|日|周|週間|个月|個月|か月|ヶ月|年|小时|小時|時間)|^(?:日志|日誌|ログ)|对象存储|オブジェクトストレージ|存储桶|ドライブ|pdf|共有フォルダ|网盘|共享盘|云端|録画|录像|录音|録音|吗|嗎|么|麼|呢|吧\s*$|是否|要不要|需不需要|能不能|可不可以|如果|假如|要是|的话|的話|请|請|^(?:你|您)|他|她|他们|用户|用戶|系统|系統|程序|服务器|浏览器|自动|自動|每次|默认|默認|か\s*$|かな|でしょうか|ましょうか|ください|下さい|もし|なら|場合|たら|ば、|自動|毎回|デフォルト|あなた|彼|ユーザー|システム|サーバー|ブラウザ|アプリ`)
)

// cjkBroadTarget is an explicit non-memory place the act is aimed at.
var cjkBroadTarget = regexp.MustCompile(`(?:到|进|進|入|在|至|成)[^，。]{0,6}(?:` + cjkNonMemTarget.String() + `)|(?:` + cjkNonMemTarget.String() + `)[^，。、]{0,4}?(?:に|へ|里|裡)`)

// judgeBroadCJK reads one folded Chinese or Japanese clause with the
// safe-side rules.
func judgeBroadCJK(cl string) clauseVerdict {
	cl = cjkPromise.ReplaceAllString(cl, "记住了")
	cl = cjkCourtesy.ReplaceAllString(cl, " ")
	cl = cjkTech.ReplaceAllString(cl, " ")
	acts := cjkBroadAct.FindAllStringIndex(cl, -1)
	if acts == nil {
		return clauseNone
	}
	done := false
	for _, d := range cjkBroadDone.FindAllStringIndex(cl, -1) {
		if !overlapsAny(d, acts) {
			done = true
			break
		}
	}
	if !done {
		return clauseNone
	}
	for _, a := range acts {
		if cjkNegBefore.MatchString(lastRunes(cl[:a[0]], 6)) || cjkNegAfter.MatchString(firstRunes(cl[a[1]:], 10)) {
			return clauseFailure
		}
	}
	if sentenceFailure.MatchString(cl) {
		return clauseFailure
	}
	if cjkBroadBlock.MatchString(cl) || cjkNotClaim.MatchString(cl) {
		return clauseNone
	}
	if cjkBroadTarget.MatchString(cl) && !strings.Contains(cl, "记忆") && !strings.Contains(cl, "記憶") {
		return clauseNone
	}
	return clauseClaim
}

// judgeBroad is the safe-side reading of a clause the narrow rules found
// nothing in.
func judgeBroad(cl string) clauseVerdict {
	if hasCJK(cl) {
		if v := judgeBroadCJK(cl); v != clauseNone {
			return v
		}
	}
	if v := judgeBroadEnglish(cl); v != clauseNone {
		return v
	}
	return judgeBroadEuropean(cl)
}

// A few rules for German, French and Spanish: a saving, noting or
// remembering verb in a completed or promised form, unless negated.
var (
	euDone = regexp.MustCompile(`\b(?:gespeichert|abgespeichert|gemerkt|notiert|vermerkt|festgehalten|hinterlegt|archiviert|merke mir|werde mir|enregistrée?s?|sauvegardée?s?|notée?s?|mémorisée?s?|retenue?s?|archivée?s?|je m'en souviendrai|je retiens|je vais retenir|je m'en souviens|guardad[oa]s?|guardé|anotad[oa]s?|anoté|registrad[oa]s?|registré|memorizad[oa]s?|memoricé|recordaré|lo recordaré|tomé nota|tomado nota|archivad[oa]s?)(?:$|[^\p{L}])`)
	euNeg  = regexp.MustCompile(`\b(?:nicht|kein|keine|nie|konnte|fehlgeschlagen|ne|n'|pas|jamais|impossible|échoué|échec|no|nunca|pude|falló|error)\b|\bn'`)
	euAsk  = regexp.MustCompile(`\b(?:soll ich|möchten sie|willst du|voulez-vous|veux-tu|dois-je|est-ce que|quiere que|quieres que|debo|¿)`)
)

func judgeBroadEuropean(cl string) clauseVerdict {
	loc := euDone.FindStringIndex(cl)
	if loc == nil {
		return clauseNone
	}
	if euNeg.MatchString(cl) {
		return clauseFailure
	}
	if euAsk.MatchString(cl) {
		return clauseNone
	}
	return clauseClaim
}

var (
	ackStrip = regexp.MustCompile(`[^\p{L}\p{N}']+`)
	cjkAck   = regexp.MustCompile(`^(?:好的|好|嗯|收到|明白|ok|はい|了解です|了解|承知しました|かしこまりました)?(?:搞定了?|搞定啦|完成了?|完成啦|弄好了|办好了|好了|妥了|完了しました|完了です|完了|できました|済みです|済みました|対応しました)(?:谢谢|です)?$`)
)

// isBareAck reports whether the whole text is a bare acknowledgement of
// completion ("Done!", "All set.", 搞定了, 完了しました): after a failed write
// the only thing it can report as done is the write.
func isBareAck(s string) bool {
	t := strings.TrimSpace(ackStrip.ReplaceAllString(s, " "))
	return enAck.MatchString(t) || cjkAck.MatchString(strings.ReplaceAll(t, " ", ""))
}
