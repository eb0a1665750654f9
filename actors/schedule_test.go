package actors

import "testing"

func TestScheduleLimit(t *testing.T) {
	tests := []struct {
		s              Schedule
		i, p, m, limit int
	}{
		{OneFOneB, 0, 4, 8, 4},
		{OneFOneB, 3, 4, 8, 1},
		{OneFOneB, 1, 4, 2, 3}, // the credit; m bounds what actually arrives
		{GPipe, 0, 4, 8, 8},
		{GPipe, 3, 4, 1, 1},
		{Sequential, 0, 4, 8, 1},
	}
	for _, tc := range tests {
		if got := tc.s.Limit(tc.i, tc.p, tc.m); got != tc.limit {
			t.Errorf("%v.Limit(%d, %d, %d) = %d, want %d", tc.s, tc.i, tc.p, tc.m, got, tc.limit)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	for _, s := range []Schedule{Sequential, GPipe, OneFOneB} {
		got, err := ParseSchedule(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %v", s.String(), got, err, s)
		}
	}
	if _, err := ParseSchedule("zigzag"); err == nil {
		t.Error(`ParseSchedule("zigzag") gave no error`)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		m    any
		want string
	}{
		{&Forward{Step: 3, Micro: 1, Shard: 2}, "Forward step 3 micro-batch 1 shard 2"},
		{&Backward{Step: 4, Micro: 0}, "Backward step 4 micro-batch 0 shard 0"},
		{&BeginStep{}, "BeginStep"},
		{nil, "nil"},
	}
	for _, tc := range tests {
		if got := describe(tc.m); got != tc.want {
			t.Errorf("describe(%#v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
