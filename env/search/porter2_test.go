package search

import "testing"

// TestStem checks Porter2 on a table of word -> stem pairs produced by the Snowball project's
// reference implementation (libstemmer 2.2.0's stemwords -l english): regular families, the
// exceptional forms, the step 1a invariants, every step-2/3/4 suffix and apostrophes. (The
// whole 79,466-word ASCII vocabulary of the embedded corpus was also compared, with no
// difference; that check needs stemwords installed and is not part of the test.)
func TestStem(t *testing.T) {
	pairs := []struct{ word, stem string }{
		{"consign", "consign"}, {"consigned", "consign"}, {"consigning", "consign"}, {"consignment", "consign"},
		{"consist", "consist"}, {"consisted", "consist"}, {"consistency", "consist"}, {"consistent", "consist"},
		{"consistently", "consist"}, {"consisting", "consist"}, {"consists", "consist"}, {"consolation", "consol"},
		{"consolations", "consol"}, {"consolatory", "consolatori"}, {"console", "consol"}, {"consoled", "consol"},
		{"consoles", "consol"}, {"consolidate", "consolid"}, {"consolidated", "consolid"}, {"consolidating", "consolid"},
		{"consoling", "consol"}, {"consolingly", "consol"}, {"consols", "consol"}, {"consonant", "conson"},
		{"consort", "consort"}, {"consorted", "consort"}, {"consorting", "consort"}, {"conspicuous", "conspicu"},
		{"conspicuously", "conspicu"}, {"conspiracy", "conspiraci"}, {"conspirator", "conspir"}, {"conspirators", "conspir"},
		{"conspire", "conspir"}, {"conspired", "conspir"}, {"conspiring", "conspir"}, {"constable", "constabl"},
		{"constables", "constabl"}, {"constance", "constanc"}, {"constancy", "constanc"}, {"constant", "constant"},
		{"knack", "knack"}, {"knackeries", "knackeri"}, {"knacks", "knack"}, {"knag", "knag"},
		{"knave", "knave"}, {"knaves", "knave"}, {"knavish", "knavish"}, {"kneaded", "knead"},
		{"kneading", "knead"}, {"knee", "knee"}, {"kneel", "kneel"}, {"kneeled", "kneel"},
		{"kneeling", "kneel"}, {"kneels", "kneel"}, {"knees", "knee"}, {"knell", "knell"},
		{"knelt", "knelt"}, {"knew", "knew"}, {"knick", "knick"}, {"knif", "knif"},
		{"knife", "knife"}, {"knight", "knight"}, {"knightly", "knight"}, {"knights", "knight"},
		{"knit", "knit"}, {"knits", "knit"}, {"knitted", "knit"}, {"knitting", "knit"},
		{"knives", "knive"}, {"knob", "knob"}, {"knobs", "knob"}, {"knock", "knock"},
		{"knocked", "knock"}, {"knocker", "knocker"}, {"knockers", "knocker"}, {"knocking", "knock"},
		{"knocks", "knock"}, {"knopp", "knopp"}, {"knot", "knot"}, {"knots", "knot"},
		{"generously", "generous"}, {"generate", "generat"}, {"generation", "generat"}, {"communism", "communism"},
		{"communication", "communic"}, {"arsenal", "arsenal"}, {"skies", "sky"}, {"dying", "die"},
		{"lying", "lie"}, {"tying", "tie"}, {"idly", "idl"}, {"gently", "gentl"},
		{"ugly", "ugli"}, {"early", "earli"}, {"only", "onli"}, {"singly", "singl"},
		{"news", "news"}, {"atlas", "atlas"}, {"andes", "andes"}, {"inning", "inning"},
		{"innings", "inning"}, {"outing", "outing"}, {"canning", "canning"}, {"herring", "herring"},
		{"proceed", "proceed"}, {"exceed", "exceed"}, {"succeed", "succeed"}, {"proceeded", "proceed"},
		{"succeeding", "succeed"}, {"cries", "cri"}, {"ties", "tie"}, {"gas", "gas"},
		{"gaps", "gap"}, {"caresses", "caress"}, {"ponies", "poni"}, {"sky", "sky"},
		{"hopping", "hop"}, {"hoping", "hope"}, {"falling", "fall"}, {"filing", "file"},
		{"agreed", "agre"}, {"feed", "feed"}, {"luxuriating", "luxuri"}, {"happily", "happili"},
		{"fluently", "fluentli"}, {"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"}, {"conformabli", "conform"},
		{"radicalli", "radic"}, {"differentli", "differ"}, {"vileli", "vile"}, {"analogousli", "analog"},
		{"vietnamization", "vietnam"}, {"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
		{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"}, {"formaliti", "formal"},
		{"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"}, {"triplicate", "triplic"}, {"formative", "format"},
		{"formalize", "formal"}, {"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"},
		{"goodness", "good"}, {"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"},
		{"airliner", "airlin"}, {"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"},
		{"irritant", "irrit"}, {"replacement", "replac"}, {"adjustment", "adjust"}, {"dependent", "depend"},
		{"adoption", "adopt"}, {"homologou", "homologou"}, {"activate", "activ"}, {"angulariti", "angular"},
		{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"}, {"probate", "probat"},
		{"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		{"menotti's", "menotti"}, {"o'brien", "o'brien"}, {"americans", "american"}, {"1990s", "1990s"},
		{"yesterday", "yesterday"}, {"happy", "happi"}, {"playing", "play"}, {"played", "play"},
		{"enjoy", "enjoy"}, {"enjoying", "enjoy"}, {"toy", "toy"}, {"boys", "boy"},
		{"sayings", "say"},
		// Short and non-ASCII words are returned unchanged.
		{"a", "a"}, {"is", "is"}, {"café", "café"}, {"straße", "straße"},
	}
	for _, p := range pairs {
		if got := Stem(p.word); got != p.stem {
			t.Errorf("Stem(%q) = %q, want %q", p.word, got, p.stem)
		}
	}
}
