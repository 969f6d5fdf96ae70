package remote

import (
	"fmt"
	"testing"

	"anykv/internal/engine"
)

func TestNet(t *testing.T) {
	put := func(tb, k, v string) engine.Write {
		return engine.Write{Table: tb, Key: []byte(k), Item: engine.Item{Value: []byte(v)}}
	}
	del := func(tb, k string) engine.Write { return engine.Write{Table: tb, Key: []byte(k), Delete: true} }
	flush := func(tb string) engine.Write { return engine.Write{Table: tb, Flush: true} }
	show := func(w Writes) string {
		s := fmt.Sprintf("all=%v flush=%v", w.FlushAll, w.Flush)
		for _, d := range w.Delete {
			s += fmt.Sprintf(" -%s/%s", d.Table, d.Key)
		}
		for _, p := range w.Put {
			s += fmt.Sprintf(" +%s/%s=%s", p.Table, p.Key, p.Item.Value)
		}
		return s
	}
	for _, c := range []struct {
		in   []engine.Write
		want string
	}{
		{[]engine.Write{put("a", "2", "x"), put("a", "1", "y"), put("a", "2", "z")}, "all=false flush=[] +a/1=y +a/2=z"},
		{[]engine.Write{put("a", "1", "x"), del("a", "1")}, "all=false flush=[] -a/1"},
		{[]engine.Write{put("a", "1", "x"), flush("a"), put("a", "2", "y"), del("a", "3"), put("b", "1", "z")},
			"all=false flush=[a] +a/2=y +b/1=z"},
		{[]engine.Write{put("a", "1", "x"), flush("b"), flush(""), del("c", "1"), put("d", "1", "y")},
			"all=true flush=[] +d/1=y"},
		{[]engine.Write{flush(""), flush("a")}, "all=true flush=[]"},
	} {
		if got := show(Net(c.in)); got != c.want {
			t.Errorf("Net(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
