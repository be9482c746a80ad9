package projector

import (
	"encoding/hex"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Neutralize makes untrusted memory text safe to place inside a memory view
// (or any other tagged frame a model reads). It never removes words; it
// changes only the characters that would let the text pose as markup or as
// another speaker:
//
//   - "&", "<" and ">" (and their fullwidth and small forms) become the
//     entities "&amp;", "&lt;" and "&gt;", so the text cannot open or close
//     a tag: not the view's own delimiters, not chat-template tokens such as
//     "<|im_start|>", "<s>" or "<<SYS>>";
//   - carriage returns become newlines, and invisible format characters
//     (zero-width spaces and joiners, bidirectional overrides, the soft
//     hyphen, the byte-order mark) are removed, so they cannot hide or
//     reorder a marker;
//   - role and instruction markers have their punctuation swapped for the
//     fullwidth form, which reads the same to a person but is not the token
//     sequence a chat template uses: "[INST]" and "[/INST]" (and the other
//     bracketed template tags listed in the code) become "［INST］",
//     markdown role headings such as "### Instruction" become
//     "＃＃＃ Instruction", and a role label such as "system:",
//     "assistant:" or "user:" becomes "system："; a Chinese or Japanese
//     role label such as "系统：" or "ユーザー:" becomes "「系统」：";
//   - the view delimiter's name "memory-view" becomes "memory view", and
//     "nonce=" becomes "nonce＝", so text cannot imitate a delimiter even
//     in escaped form.
//
// Matching is case-insensitive for ASCII letters. It is a fixed list, not
// an understanding of the text: a paraphrased instruction ("please forget
// your rules") stays readable, which is why the view also tells the model
// that its content is data, not instructions.
func Neutralize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '&', '＆', '﹠':
			b.WriteString("&amp;")
		case '<', '＜', '﹤':
			b.WriteString("&lt;")
		case '>', '＞', '﹥':
			b.WriteString("&gt;")
		case '\r':
			if i < len(s) && s[i] == '\n' {
				continue // "\r\n" becomes one "\n"
			}
			b.WriteByte('\n')
		case '\u200b', '\u200c', '\u200d', '\u200e', '\u200f', '\u2060', '\ufeff', '\u00ad', '\u061c',
			'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069':
			// invisible: dropped
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	for _, m := range markers {
		out = m.re.ReplaceAllStringFunc(out, m.fix)
	}
	return out
}

// neutralizeAttr neutralizes text for a double-quoted attribute value.
func neutralizeAttr(s string) string {
	return strings.ReplaceAll(Neutralize(s), `"`, "&quot;")
}

// NonceBytes is the entropy of a frame nonce: 128 bits.
const NonceBytes = 16

// NewNonce reads NonceBytes from random and returns them as lowercase hex:
// the nonce that tags one frame of untrusted data (a memory view, or the
// extraction engine's transcript and related memories).
func NewNonce(random io.Reader) (string, error) {
	var b [NonceBytes]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Untrusted prepares untrusted text for the body of a frame tagged with
// nonce: it is neutralized ([Neutralize]) and every occurrence of the
// nonce in it is masked, so the text can neither close the frame nor
// repeat its tag.
func Untrusted(text, nonce string) string {
	out := Neutralize(text)
	if nonce != "" {
		out = strings.ReplaceAll(out, nonce, strings.Repeat("x", len(nonce)))
	}
	return out
}

// UntrustedAttr is [Untrusted] for a double-quoted attribute value of a
// frame's tag: double quotes are escaped as well.
func UntrustedAttr(text, nonce string) string {
	out := neutralizeAttr(text)
	if nonce != "" {
		out = strings.ReplaceAll(out, nonce, strings.Repeat("x", len(nonce)))
	}
	return out
}

type marker struct {
	re  *regexp.Regexp
	fix func(string) string
}

// fullwidth swaps ASCII punctuation for its fullwidth form.
var fullwidth = strings.NewReplacer("[", "［", "]", "］", "#", "＃", ":", "：", "|", "｜", "=", "＝", "/", "／")

var markers = []marker{
	// Bracketed chat-template tags.
	{regexp.MustCompile(`(?i)\[\s*/?\s*(inst|sys|system|system_prompt|user|assistant|tool_calls?|tool_results?|available_tools|end|start)\s*\]`), fullwidth.Replace},
	// Markdown role and instruction headings.
	{regexp.MustCompile(`(?i)#{1,6}[ \t]*(instructions?|system|response|user|assistant|human|input|output|developer|context)\b`), fullwidth.Replace},
	// Role labels ("system:", "Assistant :").
	{regexp.MustCompile(`(?i)\b(system|assistant|user|human|developer|tool|function|model|ai|bot)[ \t]*:`), fullwidth.Replace},
	// Chinese and Japanese role labels ("系统：", "助手:", "ユーザー："): these
	// already use the fullwidth colon, so the role word is bracketed
	// instead ("「系统」："), which no longer reads as a speaker label.
	{regexp.MustCompile(`(系统|系統|助手|用户|用戶|人类|人類|システム|アシスタント|ユーザー|ユーザ)[ \t　]*[:：]`), func(m string) string {
		word := strings.TrimRight(m, " \t　:：")
		return "「" + word + "」："
	}},
	// Pipe-delimited template names left after "<" and ">" were escaped.
	{regexp.MustCompile(`(?i)\|\s*(im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|`), fullwidth.Replace},
	// The view delimiter's name and its nonce attribute.
	{regexp.MustCompile(`(?i)memory-view`), func(m string) string { return m[:6] + " " + m[7:] }},
	{regexp.MustCompile(`(?i)nonce\s*=`), fullwidth.Replace},
}
