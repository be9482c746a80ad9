package embedder

import (
	"context"
	"testing"
	"unicode/utf8"
)

// About 200 characters each.
const (
	benchEnglish = "The payment service deploys to staging every Friday afternoon. " +
		"Database migrations must run before the release pipeline starts, and the " +
		"on-call engineer confirms the rollback plan in the team channel first."
	benchChinese = "我们的项目每周五下午把支付服务部署到预发布环境。发布流水线开始之前必须先执行数据库迁移，" +
		"值班工程师需要在团队频道里确认回滚方案。所有配置变更都要经过代码评审，" +
		"监控告警规则由平台组统一维护，任何人不得绕过审批直接修改生产数据库。" +
		"如果发布失败，值班工程师应当立即回滚并在事故记录中写明原因、影响范围和后续改进措施，" +
		"以便团队在周会上复盘，并把经验整理成文档放进项目知识库，供新同事入职时学习参考和查阅。"
)

func benchmarkLocal(b *testing.B, text string) {
	l := NewLocal()
	texts := []string{text}
	ctx := context.Background()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
	b.ReportMetric(float64(utf8.RuneCountInString(text)), "chars/text")
}

func BenchmarkLocalEnglish(b *testing.B) { benchmarkLocal(b, benchEnglish) }

func BenchmarkLocalChinese(b *testing.B) { benchmarkLocal(b, benchChinese) }
