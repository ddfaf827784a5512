package verlexport

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"agentr1/env/qa"
)

// wantSchema is the layout pandas (pyarrow) writes for verl's RL datasets, column for column:
// strings as binary (STRING), lists in the three-level LIST form (group (LIST) > repeated group
// list > element), the dict columns as groups, the index as a signed 64-bit integer.
const wantSchema = `message Row {
	required binary data_source (STRING);
	required group prompt (LIST) {
		repeated group list {
			required group element {
				required binary role (STRING);
				required binary content (STRING);
			}
		}
	}
	required binary ability (STRING);
	required group reward_model {
		required binary style (STRING);
		required group ground_truth {
			required group target (LIST) {
				repeated group list {
					required binary element (STRING);
				}
			}
			required boolean numeric;
		}
	}
	required group extra_info {
		required int64 index (INT(64,true));
		required binary question_id (STRING);
		required binary split (STRING);
	}
}`

func TestSchema(t *testing.T) {
	if got := parquet.SchemaOf(Row{}).String(); got != wantSchema {
		t.Errorf("schema:\n%s\nwant:\n%s", got, wantSchema)
	}
}

func TestRowsRoundTrip(t *testing.T) {
	qs := []qa.Question{
		{ID: "q1", Question: "Who wrote Maria Golovin?", Answers: []string{"Gian Carlo Menotti", "Menotti"}, Dataset: "hotpotqa"},
		{ID: "q2", Question: "How many years apart?", Answers: []string{"73"}, Numeric: true}, // no dataset: takes the default
	}
	rows := Rows(qs, "SYSTEM", "validation", "mine")
	want := []Row{
		{
			DataSource:  "hotpotqa",
			Prompt:      []Message{{"system", "SYSTEM"}, {"user", "Question: Who wrote Maria Golovin?"}},
			Ability:     "multihop_qa",
			RewardModel: RewardModel{Style: "rule", GroundTruth: GroundTruth{Target: []string{"Gian Carlo Menotti", "Menotti"}}},
			ExtraInfo:   ExtraInfo{Index: 0, QuestionID: "q1", Split: "validation"},
		},
		{
			DataSource:  "mine",
			Prompt:      []Message{{"system", "SYSTEM"}, {"user", "Question: How many years apart?"}},
			Ability:     "multihop_qa",
			RewardModel: RewardModel{Style: "rule", GroundTruth: GroundTruth{Target: []string{"73"}, Numeric: true}},
			ExtraInfo:   ExtraInfo{Index: 1, QuestionID: "q2", Split: "validation"},
		},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("Rows:\n%+v\nwant\n%+v", rows, want)
	}
	path := filepath.Join(t.TempDir(), "validation.parquet")
	if err := WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.Schema().String(); got != wantSchema {
		t.Errorf("file schema:\n%s\nwant:\n%s", got, wantSchema)
	}
	if pf.NumRows() != 2 {
		t.Errorf("file holds %d rows, want 2", pf.NumRows())
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	notParquet := filepath.Join(dir, "train.parquet")
	if err := os.WriteFile(notParquet, []byte("{\"id\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.parquet"), notParquet} {
		if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile(%s): error %v, want one naming the file", path, err)
		}
	}
}

func TestWriteFileKeepsNothingOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-folder", "train.parquet")
	if err := WriteFile(path, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteFile into a missing folder: error %v, want one naming the file", err)
	}
}
