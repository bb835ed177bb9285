package tests

import (
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/herald/herald/runner/sender/sendertest"
	"github.com/herald/herald/tests/testdb"
)

// docs/deploy/kubernetes.yaml, run as Kubernetes would run it: its ConfigMap is the
// runner's whole environment (only the database, the SMTP relay and the address
// swapped for the test's, and the Secret's files written where the volume mounts
// them). Every variable is one herald run reads; the probes' paths answer 200 on the
// container's port; a message goes out; SIGTERM ends the runner within the
// manifest's terminationGracePeriodSeconds, which is longer than its shutdown grace
// and a lease; the migration Job runs herald migrate.
func TestTheKubernetesManifestRuns(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testdb.RepoRoot(), "docs", "deploy", "kubernetes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet struct {
			Path string
			Port string
		} `yaml:"httpGet"`
	}
	type container struct {
		Args  []string
		Ports []struct {
			Name          string
			ContainerPort int `yaml:"containerPort"`
		}
		LivenessProbe  probe `yaml:"livenessProbe"`
		ReadinessProbe probe `yaml:"readinessProbe"`
		VolumeMounts   []struct {
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	var config map[string]string
	var runner, migrate container
	var grace int
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	for {
		var doc struct {
			Kind string
			Data map[string]string
			Spec struct {
				Template struct {
					Spec struct {
						Grace      int         `yaml:"terminationGracePeriodSeconds"`
						Containers []container `yaml:"containers"`
					}
				}
			}
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		switch doc.Kind {
		case "ConfigMap":
			config = doc.Data
		case "Deployment":
			runner, grace = doc.Spec.Template.Spec.Containers[0], doc.Spec.Template.Spec.Grace
		case "Job":
			migrate = doc.Spec.Template.Spec.Containers[0]
		}
	}
	if len(config) == 0 || len(runner.Args) == 0 || strings.Join(migrate.Args, " ") != "migrate" || strings.Join(runner.Args, " ") != "run" {
		t.Fatalf("the manifest's ConfigMap, Deployment or Job is missing: %v %+v %+v", config, runner, migrate)
	}
	mounted := runner.VolumeMounts[0].MountPath
	if path.Dir(config["HERALD_SMTP_PASSWORD_FILE"]) != mounted || path.Dir(config["PGPASSFILE"]) != mounted {
		t.Fatalf("the secret files are not under the Secret's mount %s: %v", mounted, config)
	}
	_, port, _ := net.SplitHostPort(config["HERALD_HTTP_ADDR"])
	if runner.Ports[0].ContainerPort == 0 || port != strconv.Itoa(runner.Ports[0].ContainerPort) ||
		runner.LivenessProbe.HTTPGet.Port != runner.Ports[0].Name || runner.ReadinessProbe.HTTPGet.Port != runner.Ports[0].Name {
		t.Fatalf("the probes and HERALD_HTTP_ADDR do not meet on the container's port: %+v, %s", runner, config["HERALD_HTTP_ADDR"])
	}
	shutdown, _ := time.ParseDuration(config["HERALD_SHUTDOWN_GRACE"])
	lease, _ := time.ParseDuration(config["HERALD_LEASE"])
	if time.Duration(grace)*time.Second <= shutdown+lease {
		t.Fatalf("terminationGracePeriodSeconds %d is not longer than the shutdown grace and a lease (%s)", grace, shutdown+lease)
	}

	dbURL := testdb.New(t)
	pool := testdb.Pool(t, dbURL)
	relay := sendertest.StartSMTP(t, true)
	relay.User = config["HERALD_SMTP_USERNAME"]
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "smtp-password"), []byte(relay.Password+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	host, relayPort, _ := net.SplitHostPort(relay.Addr)
	addr := freeAddr(t)
	env := []string{}
	for k, v := range config {
		switch k {
		case "DATABASE_URL", "PGPASSFILE": // the test's database, with its own credentials
			continue
		case "HERALD_HTTP_ADDR":
			v = addr
		case "HERALD_SMTP_HOST":
			v = host
		case "HERALD_SMTP_PASSWORD_FILE":
			v = filepath.Join(secrets, "smtp-password")
		}
		env = append(env, k+"="+v)
	}
	env = append(env, "HERALD_SMTP_PORT="+relayPort, "HERALD_SMTP_CA_FILE="+relay.CAFile)
	cmd, logs := runnerProcessArgs(t, dbURL, runner.Args, env...)
	waitHTTP(t, addr)
	for _, p := range []string{runner.LivenessProbe.HTTPGet.Path, runner.ReadinessProbe.HTTPGet.Path} {
		eventually(t, 20*time.Second, p+" answering 200", func() bool {
			resp, err := http.Get("http://" + addr + p)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	}
	id := scalar[int64](t, pool, `SELECT herald.enqueue('email', 'ana@example.net', '{"subject":"s","text":"t"}')`)
	eventually(t, 20*time.Second, "the message sent", func() bool { return countWhere(t, pool, `id = $1 AND status = 'sent'`, id) == 1 })
	waitExit(t, cmd, logs, time.Duration(grace)*time.Second)
	if strings.Contains(logs.String(), "does not read") {
		t.Fatalf("the ConfigMap holds variables herald run does not read:\n%s", logs.String())
	}
}
