package winexec

import "testing"

func TestCheckOperators(t *testing.T) {
	if err := CheckOperators(`p "a & b" "x>y"`); err != nil {
		t.Errorf("quoted operators refused: %v", err)
	}
	for _, s := range []string{`p a & q`, `p > out.txt`, `p | more`, `p ^a`} {
		if err := CheckOperators(s); err == nil {
			t.Errorf("CheckOperators(%q) accepted cmd.exe operators", s)
		}
	}
}
