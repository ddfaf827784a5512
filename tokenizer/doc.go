// Package tokenizer is a byte-level BPE tokenizer that gives the same ids as Hugging Face
// tokenizers for Qwen2/Qwen2.5/Qwen3 tokenizer.json files, trains small vocabularies of the same
// kind for the policies trained here, and renders tool-use conversations in Qwen2.5's ChatML
// layout.
//
// Encoding a text follows the Hugging Face pipeline of a Qwen tokenizer.json, stage by stage:
//
//  1. added tokens ("<|im_start|>", "<tool_call>", ...) are split out of the raw text first,
//     leftmost-longest, and map straight to their ids (added.go);
//  2. each stretch of text between them is normalised to Unicode NFC (the "normalizer": {"type":
//     "NFC"} of tokenizer.json; golang.org/x/text/unicode/norm does the normalisation);
//  3. the Qwen2 pre-tokenizer splits the stretch into pre-tokens with the regular expression
//     of tokenizer.json's Split pre-tokenizer, implemented by hand because Go's regexp has no
//     lookahead (pretokenize.go documents it rule by rule);
//  4. each pre-token's UTF-8 bytes start as one symbol per byte (the ByteLevel pre-tokenizer's
//     byte-to-unicode mapping, bytelevel.go), and byte-level BPE merges adjacent symbols in order
//     of merge rank until no ranked pair is left (bpe.go, after Sennrich et al. 2016 and GPT-2's
//     encoder.py).
//
// Files: tokenizer.go (the Tokenizer, Encode, Decode), added.go (added-token matching),
// pretokenize.go (the Qwen2 pattern by hand), bytelevel.go (byte-to-unicode, lossy UTF-8),
// bpe.go (merging, word cache), batch.go (EncodeBatch), load.go, config.go and save.go
// (tokenizer.json and tokenizer_config.json), build.go (checks and assembly), train.go (BPE
// training), chat.go and chat_template.go (Qwen2.5 ChatML rendering). Package golden/qwentok
// checks Encode and Decode against the real Qwen3 tokenizer's golden cases.
//
// The only dependency outside the standard library is golang.org/x/text/unicode/norm for NFC.
//
// Decoding concatenates each id's bytes and replaces invalid UTF-8 as Hugging Face's ByteLevel
// decoder does (String::from_utf8_lossy). Load and Save read and write tokenizer.json and
// tokenizer_config.json; Train learns merges from a corpus; RenderChat renders messages and
// tool schemas as Qwen2.5's chat template does, RenderChatQwen3 as Qwen3's (with its <think>
// blocks), and a Tokenizer's RenderChat picks the one its folder declares (ChatFormat).
package tokenizer
