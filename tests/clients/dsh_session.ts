// A DSH-like scripted session, typed by the OpenAPI schema: `api.d.ts` is generated from it by
// openapi-typescript, and `tsc --strict` checks this script against it before it runs. Each
// call goes through its tool's own execute operation, so every result has its tool's type with
// no cast: an add's is Prepared, Confirmed or Cancelled, told apart by their keys.
// Usage: node dsh_session.js <base url> <client key> <account> <extension> <workspace> <file>...
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Schemas = components["schemas"];
type Gallery = Schemas["Gallery"];
type Prepared = Schemas["ToolResult_arkme_extension_preview_add_Prepared"];
type Confirmed = Schemas["ToolResult_arkme_extension_preview_add_Confirmed"];
type Cancelled = Schemas["ToolResult_arkme_extension_preview_add_Cancelled"];
type AddResult = Schemas["ToolResult_arkme_extension_preview_add"];
type AddArguments = Schemas["ToolArguments_arkme_extension_preview_add"];
type Arguments = Schemas["ExecuteRequestRequest"]["arguments"];

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

async function approval(name: string, args: Arguments): Promise<string> {
  const decision = await api.POST("/dsh/v1/sessions/{session}/tools/{name}/pre-execute", {
    params: { path: { session, name } },
    body: { arguments: args },
  });
  const approval = decision.data?.approval;
  if (decision.data?.decision !== "ask" || !approval) fail(`${name} pre-execute`, decision.error ?? decision.data);
  return approval;
}

async function add(args: AddArguments): Promise<AddResult> {
  const answer = await api.POST("/dsh/v1/sessions/{session}/tools/arkme_extension_preview_add/execute", {
    params: { path },
    body: { arguments: args },
  });
  return answer.data?.result ?? fail(`add ${args.action}`, answer.error);
}

const isPrepared = (result: AddResult): result is Prepared => "operation" in result;
const isConfirmed = (result: AddResult): result is Confirmed => "added" in result;
const isCancelled = (result: AddResult): result is Cancelled => !isPrepared(result) && !isConfirmed(result);

const prepared = await add({ action: "prepare", extension, source: "workspace", workspace_paths: files });
if (!isPrepared(prepared)) fail("prepare", prepared);
const said = await api.POST("/dsh/v1/sessions/{session}/messages", {
  params: { path },
  body: { id: `ts-${Date.now()}`, text: "确认" },
});
if (said.response.status !== 201) fail("message", said.error);
const confirmed = await add({ action: "confirm", extension, operation: prepared.operation });
if (!isConfirmed(confirmed)) fail("confirm", confirmed);
const gallery: Gallery = confirmed.gallery;

const order = gallery.items.map((item) => item.item).reverse();
const reorder = { extension, order, revision: gallery.revision };
const reorderedAnswer = await api.POST("/dsh/v1/sessions/{session}/tools/arkme_extension_preview_reorder/execute", {
  params: { path },
  body: { arguments: reorder, approval: await approval("arkme_extension_preview_reorder", reorder) },
});
const reordered: Schemas["ToolResult_arkme_extension_preview_reorder"] =
  reorderedAnswer.data?.result ?? fail("reorder", reorderedAnswer.error);

const again = await add({ action: "prepare", extension, source: "workspace", workspace_paths: files.slice(0, 1) });
if (!isPrepared(again)) fail("prepare again", again);
const cancelled = await add({ action: "cancel", extension, operation: again.operation });
if (!isCancelled(cancelled)) fail("cancel", cancelled);

const contextAnswer = await api.POST("/dsh/v1/sessions/{session}/tools/arkme_context/execute", {
  params: { path },
  body: { arguments: {} },
});
const context: Schemas["ToolResult_arkme_context"] = contextAnswer.data?.result ?? fail("context", contextAnswer.error);
const candidatesAnswer = await api.POST("/dsh/v1/sessions/{session}/tools/arkme_group_member_candidates/execute", {
  params: { path },
  body: { arguments: { source_ref: context.groups[0].source_ref } },
});
const candidates: Schemas["ToolResult_arkme_group_member_candidates"] =
  candidatesAnswer.data?.result ?? fail("candidates", candidatesAnswer.error);

console.log(JSON.stringify({
  phases,
  question: prepared.question,
  added: confirmed.added,
  order: reordered.gallery.items.map((item) => item.item),
  expected_order: order,
  cancelled_items: cancelled.gallery.items.length,
  group: candidates.group.name,
  candidates: candidates.candidates.map((candidate) => candidate.display_name),
}));
