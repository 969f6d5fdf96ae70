// Package golibs runs Go libraries that people put on Redis, unchanged, against the real anykv binary
// (internal/servertest starts it): asynq, a job queue of Lua scripts over lists, sorted sets and hashes, and
// redsync, Redlock's distributed mutex.
package golibs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"anykv/internal/servertest"
)

// TestAsynq: asynq's client enqueues tasks (plain, delayed, unique, one that always fails), its server runs them
// with results written back, retries the failing one per MaxRetry then archives it, runs the delayed one after its
// delay, and its Inspector reports queue counts, task states and results, the archived task's error and the
// servers. (asynq's own suites, internal/rdb and the root package, pass against anykv too; they need a server at a
// fixed address and run minutes, so CI runs this instead.)
func TestAsynq(t *testing.T) {
	opt := asynq.RedisClientOpt{Addr: servertest.Start(t, servertest.Options{}).RESP}
	client := asynq.NewClient(opt)
	defer client.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	var mu sync.Mutex
	runs := map[string]int{}
	ran := map[string]time.Time{}
	count := func(ctx context.Context) string {
		id, _ := asynq.GetTaskID(ctx)
		mu.Lock()
		defer mu.Unlock()
		runs[id]++
		ran[id] = time.Now()
		return id
	}
	mux := asynq.NewServeMux()
	mux.HandleFunc("echo", func(ctx context.Context, task *asynq.Task) error {
		count(ctx)
		_, err := task.ResultWriter().Write(append([]byte("done:"), task.Payload()...))
		return err
	})
	mux.HandleFunc("fail", func(ctx context.Context, _ *asynq.Task) error {
		count(ctx)
		return errors.New("boom")
	})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 4, Queues: map[string]int{"default": 1, "critical": 2},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond },
		DelayedTaskCheckInterval: 100 * time.Millisecond, LogLevel: asynq.FatalLevel})

	var plain []*asynq.TaskInfo
	for i := range 5 {
		ti, err := client.Enqueue(asynq.NewTask("echo", []byte(fmt.Sprint(i))), asynq.Retention(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, ti)
	}
	enqueued := time.Now()
	delayed, err := client.Enqueue(asynq.NewTask("echo", []byte("later")), asynq.ProcessIn(time.Second),
		asynq.Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	failing, err := client.Enqueue(asynq.NewTask("fail", nil), asynq.MaxRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	unique := []asynq.Option{asynq.Unique(time.Minute), asynq.Queue("critical")}
	uniq, err := client.Enqueue(asynq.NewTask("echo", []byte("u")), unique...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Enqueue(asynq.NewTask("echo", []byte("u")), unique...); !errors.Is(err, asynq.ErrDuplicateTask) {
		t.Fatalf("the same unique task again: %v, want ErrDuplicateTask", err)
	}
	qi, err := insp.GetQueueInfo("default")
	if err != nil {
		t.Fatal(err)
	}
	if qi.Pending != 6 || qi.Scheduled != 1 || qi.Size != 7 {
		t.Fatalf("before the server runs: %+v", qi)
	}

	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.Now().Add(20 * time.Second)
	for qi.Completed != 6 || qi.Archived != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("tasks not done: %+v", qi)
		}
		time.Sleep(50 * time.Millisecond)
		if qi, err = insp.GetQueueInfo("default"); err != nil {
			t.Fatal(err)
		}
	}
	if qi.Processed != 9 || qi.Failed != 3 || qi.Pending != 0 || qi.Scheduled != 0 || qi.Retry != 0 {
		t.Errorf("after: %+v, want 9 processed (6 + 3 runs of the failing task), 3 failed", qi)
	}
	for i, ti := range append(plain, delayed) {
		got, err := insp.GetTaskInfo("default", ti.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "done:" + string(ti.Payload)
		if got.State != asynq.TaskStateCompleted || string(got.Result) != want {
			t.Errorf("task %d: %v %q, want completed %q", i, got.State, got.Result, want)
		}
	}
	archived, err := insp.ListArchivedTasks("default")
	if err != nil || len(archived) != 1 || archived[0].ID != failing.ID || archived[0].LastErr != "boom" ||
		archived[0].Retried != 2 {
		t.Errorf("archived: %v %+v", err, archived)
	}
	mu.Lock()
	// asynq scores a scheduled task with its due time in whole seconds (processAt.Unix()), so a task delayed by
	// 1 s is due at the start of the second it falls in: up to a second early. It must not run before that.
	due := time.Unix(enqueued.Add(time.Second).Unix(), 0)
	if at := ran[delayed.ID]; at.Before(due) || at.Sub(enqueued) > 5*time.Second {
		t.Errorf("the task delayed by 1s (due at %v, its second) ran %v after it was enqueued", due, at.Sub(enqueued))
	}
	if runs[failing.ID] != 3 || runs[uniq.ID] != 1 {
		t.Errorf("runs: failing %d (want 3), unique %d (want 1)", runs[failing.ID], runs[uniq.ID])
	}
	mu.Unlock()
	if servers, err := insp.Servers(); err != nil || len(servers) != 1 {
		t.Errorf("servers: %v %d", err, len(servers))
	}
	if qs, err := insp.Queues(); err != nil || fmt.Sprint(qs) != "[critical default]" {
		t.Errorf("queues: %v %v", err, qs)
	}
}
