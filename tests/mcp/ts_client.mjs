// The official MCP TypeScript SDK as a host uses it, against one session's endpoint.
// Usage: node ts_client.mjs <mcp url> <client key> <approval from REST pre-execute>
// Prints one JSON object: what the server answered at each step.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, approval] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "arkme-ts-check", version: "1.0.0" });
await client.connect(transport);

const tools = await client.listTools();
const context = await client.callTool({ name: "arkme_context", arguments: {} });
const change = await client.callTool({
  name: "arkme_id_change",
  arguments: { arkme_id: "alice_ts" },
  _meta: { "io.arkme/approval": approval },
});
const refused = await client.callTool({
  name: "arkme_id_change",
  arguments: { arkme_id: "alice_ts" },
  _meta: { "io.arkme/approval": approval },
});

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion ?? null,
  instructions: client.getInstructions() ?? null,
  tools: tools.tools.map((tool) => ({ name: tool.name, title: tool.title, annotations: tool.annotations })),
  context: context.structuredContent,
  change: { isError: change.isError ?? false, structuredContent: change.structuredContent },
  refused: { isError: refused.isError ?? false, structuredContent: refused.structuredContent },
}));
await client.close();
