// Command manifests prints the Kubernetes objects of YAML manifest files as one JSON array,
// so that tools/k8s/objects.py (standard-library Python) can install a controller's CRDs and
// webhook configurations as its release ships them.
//
// Usage: manifests FILE.yaml...
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	objects := []json.RawMessage{}
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fail(err)
		}
		// documents are separated by a line holding only "---"
		for _, doc := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, err := yaml.YAMLToJSON(doc)
			if err != nil {
				fail(fmt.Errorf("%s: %w", path, err))
			}
			if string(obj) != "null" {
				objects = append(objects, obj)
			}
		}
	}
	out, err := json.Marshal(objects)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "manifests:", err)
	os.Exit(1)
}
