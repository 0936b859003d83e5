// Validates Kubernetes YAML against the Kubernetes OpenAPI schemas, offline (no cluster runs in
// CI): each document's types, formats, enums and required fields with kubernetes-models (ajv
// validators generated from the OpenAPI spec), and every field name against
// @kubernetes/client-node's models (generated from the same spec), since the OpenAPI schemas
// allow unknown fields and the API server would drop a misspelt one ("imagePullSecret") without
// a word.
//   node validate.mjs FILE...            every document by its apiVersion and kind
//   node validate.mjs --type V1Affinity FILE   a fragment, as that type
// Prints one line per problem and exits 1 when there is any, 0 when every document is valid.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const modelsDir = path.join(here, "node_modules/@kubernetes/client-node/dist/gen/models");

// apiVersion/kind -> [kubernetes-models module, class, client-node type]
const kinds = {
  "batch/v1/Job": ["kubernetes-models/batch/v1", "Job", "V1Job"],
  "apps/v1/DaemonSet": ["kubernetes-models/apps/v1", "DaemonSet", "V1DaemonSet"],
  "v1/ServiceAccount": ["kubernetes-models/v1", "ServiceAccount", "V1ServiceAccount"],
  "v1/ConfigMap": ["kubernetes-models/v1", "ConfigMap", "V1ConfigMap"],
  "v1/Node": ["kubernetes-models/v1", "Node", "V1Node"],
  "rbac.authorization.k8s.io/v1/ClusterRole": [
    "kubernetes-models/rbac.authorization.k8s.io/v1", "ClusterRole", "V1ClusterRole"],
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": [
    "kubernetes-models/rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
    "V1ClusterRoleBinding"],
};

const typeMaps = new Map();
async function attributes(type) {
  if (!typeMaps.has(type)) {
    const file = path.join(modelsDir, `${type}.js`);
    const module = await import(file);
    typeMaps.set(type, module[type].getAttributeTypeMap());
  }
  return typeMaps.get(type);
}

const primitive = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
  Date: (v) => typeof v === "string",
  IntOrString: (v) => typeof v === "string" || typeof v === "number",
};

// resource.Quantity is int-or-string in the OpenAPI spec ("nvidia.com/gpu: 8"); the client's
// models type resource maps as strings.
const quantityMaps = new Set(["limits", "requests"]);
function fieldType(field) {
  return quantityMaps.has(field.baseName) && field.type === "{ [key: string]: string; }"
    ? "{ [key: string]: IntOrString; }"
    : field.type;
}

// Every key of `value` must be a field of `type`; recurses into typed fields.
async function strict(value, type, where, problems) {
  if (value === null || value === undefined) return;
  const array = type.match(/^Array<(.*)>$/);
  if (array) {
    if (!Array.isArray(value)) return problems.push(`${where}: must be an array`);
    for (let i = 0; i < value.length; i++) await strict(value[i], array[1], `${where}[${i}]`, problems);
    return;
  }
  const map = type.match(/^\{ \[key: string\]: (.*); \}$/);
  if (map) {
    if (typeof value !== "object" || Array.isArray(value)) return problems.push(`${where}: must be a map`);
    for (const [k, v] of Object.entries(value)) await strict(v, map[1], `${where}.${k}`, problems);
    return;
  }
  if (primitive[type]) {
    if (!primitive[type](value)) problems.push(`${where}: must be ${type}, not ${JSON.stringify(value)}`);
    return;
  }
  if (type === "any" || type === "object" || !fs.existsSync(path.join(modelsDir, `${type}.js`))) return;
  if (typeof value !== "object" || Array.isArray(value)) return problems.push(`${where}: must be an object (${type})`);
  const fields = await attributes(type);
  for (const [key, v] of Object.entries(value)) {
    const field = fields.find((f) => f.baseName === key);
    if (!field) problems.push(`${where}.${key}: unknown field of ${type}`);
    else await strict(v, fieldType(field), `${where}.${key}`, problems);
  }
}

async function validate(doc, type, where, problems) {
  if (!type) {
    const known = kinds[`${doc.apiVersion}/${doc.kind}`];
    if (!known) return problems.push(`${where}: no schema here for ${doc.apiVersion} ${doc.kind}`);
    const [module, name, nodeType] = known;
    const Model = (await import(module))[name];
    try {
      new Model(doc).validate();
    } catch (e) {
      problems.push(`${where}: ${e.message}`);
    }
    type = nodeType;
  }
  await strict(doc, type, where, problems);
}

const args = process.argv.slice(2);
let type = null;
if (args[0] === "--type") {
  type = args[1];
  args.splice(0, 2);
}
const problems = [];
let count = 0;
for (const file of args) {
  const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d !== null);
  for (let i = 0; i < docs.length; i++, count++) await validate(docs[i], type, `${file}#${i}`, problems);
}
for (const p of problems) console.log(p);
console.log(`${count} document(s), ${problems.length} problem(s)`);
process.exit(problems.length ? 1 : count ? 0 : 1);
