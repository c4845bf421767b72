// A DSH-like scripted session, typed by the OpenAPI schema: `api.d.ts` is generated from it by
// openapi-typescript, and `tsc --strict` checks this script against it before it runs.
// Usage: node dsh_session.js <base url> <client key> <account> <extension> <workspace> <file>...
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Gallery = components["schemas"]["Gallery"];
type Prepared = components["schemas"]["ToolResult_arkme_extension_preview_add_Prepared"];
type Confirmed = components["schemas"]["ToolResult_arkme_extension_preview_add_Confirmed"];
type Context = components["schemas"]["ToolResult_arkme_context"];
type Candidates = components["schemas"]["ToolResult_arkme_group_member_candidates"];
type Arguments = components["schemas"]["ExecuteRequestRequest"]["arguments"];

const [baseUrl, key, account, extension, workspace, ...files] = process.argv.slice(2);
const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });

function fail(step: string, error: unknown): never {
  throw new Error(`${step}: ${JSON.stringify(error)}`);
}

const opened = await api.POST("/dsh/v1/sessions", { body: { account, workspace } });
const session: string = opened.data?.session ?? fail("open", opened.error);
const path = { session };

const mounted = await api.PUT("/dsh/v1/sessions/{session}/phases/attachments", { params: { path } });
const phases: string[] = mounted.data?.phases ?? fail("mount", mounted.error);

async function execute(name: string, args: Arguments, approval?: string): Promise<unknown> {
  const answer = await api.POST("/dsh/v1/sessions/{session}/tools/{name}/execute", {
    params: { path: { session, name } },
    body: { arguments: args, ...(approval ? { approval } : {}) },
  });
  return answer.data?.result ?? fail(name, answer.error);
}

async function approved(name: string, args: Arguments): Promise<unknown> {
  const decision = await api.POST("/dsh/v1/sessions/{session}/tools/{name}/pre-execute", {
    params: { path: { session, name } },
    body: { arguments: args },
  });
  const approval = decision.data?.approval;
  if (decision.data?.decision !== "ask" || !approval) fail(`${name} pre-execute`, decision.error ?? decision.data);
  return execute(name, args, approval);
}

const add = "arkme_extension_preview_add";
const prepared = (await execute(add, {
  action: "prepare", extension, source: "workspace", workspace_paths: files,
})) as Prepared;
const said = await api.POST("/dsh/v1/sessions/{session}/messages", {
  params: { path },
  body: { id: `ts-${Date.now()}`, text: "确认" },
});
if (said.response.status !== 201) fail("message", said.error);
const confirmed = (await execute(add, { action: "confirm", extension, operation: prepared.operation })) as Confirmed;
const gallery: Gallery = confirmed.gallery;
const order = gallery.items.map((item) => item.item).reverse();
const reordered = (await approved("arkme_extension_preview_reorder", {
  extension, order, revision: gallery.revision,
})) as { gallery: Gallery };
const context = (await execute("arkme_context", {})) as Context;
const candidates = (await execute("arkme_group_member_candidates", {
  source_ref: context.groups[0].source_ref,
})) as Candidates;

console.log(JSON.stringify({
  phases,
  question: prepared.question,
  added: confirmed.added,
  order: reordered.gallery.items.map((item) => item.item),
  expected_order: order,
  group: candidates.group.name,
  candidates: candidates.candidates.map((candidate) => candidate.display_name),
}));
