// The TypeScript v2 client (@modelcontextprotocol/client 2.4.0) pinned to
// MCP 2026-07-28 (`versionNegotiation: {mode: {pin: '2026-07-28'}}`)
// against the desk serving both eras, over Streamable HTTP and over stdio:
// it discovers, lists and calls tools statelessly, gets the archive
// search's progress, and cancels a slow call by aborting it (HTTP: the
// call's stream is closed; stdio: `notifications/cancelled`), which must
// stop the desk's worker. Over HTTP the wire is checked too: only POSTs,
// no Mcp-Session-Id either way, no `initialize`, the 2026-07-28 headers
// matching the body, and one runtime per request, each closed.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import {
    DESK,
    FIRST_TOOLS,
    MODERN,
    REPO,
    check,
    checkOpenVisits,
    recordMessages,
    recordingFetch,
    run,
    startHttpDesk,
    stdioArgs
} from './lib.mjs';

const ARCHIVE = { name: 'visits.search', arguments: { query: 'cooler', includeArchive: true } };

function pinnedClient(errors) {
    const client = new Client({ name: 'ts-v2', version: '2.4.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    client.onerror = error => errors.push(String(error));
    return client;
}

/** What both transports must give: tools, progress, cancellation. */
async function exercise(client, t, log, errors) {
    check(client.getProtocolEra() === 'modern', `era ${client.getProtocolEra()}`, t);
    check(client.getNegotiatedProtocolVersion() === MODERN, `version ${client.getNegotiatedProtocolVersion()}`, t);
    const discovered = client.getDiscoverResult();
    check(discovered?.supportedVersions?.includes(MODERN), `discover: ${JSON.stringify(discovered)}`, t);
    check(client.getServerVersion()?.name === 'dispatchDesk', `serverInfo ${JSON.stringify(client.getServerVersion())}`, t);

    const { tools } = await client.listTools();
    const names = tools.map(tool => tool.name);
    check(JSON.stringify(names.slice(0, 2)) === JSON.stringify(FIRST_TOOLS), `tools ${names}`, t);
    checkOpenVisits(await client.callTool({ name: 'board.listOpenVisits', arguments: {} }), t);
    const bad = await client.callTool({ name: 'visits.search', arguments: { query: 7 } });
    check(bad.isError === true && bad._meta['rcip/outcome'].error.code === 'INPUT_INVALID', JSON.stringify(bad), t);

    // Progress: every 100 ms of the 800 ms archive scan, increasing, all
    // of it on the wire before the response.
    const progress = [];
    const archive = await client.callTool(ARCHIVE, { onprogress: p => progress.push(p) });
    check(archive.isError !== true && archive.structuredContent.archive.length > 0, JSON.stringify(archive), t);
    const call = log.sent.filter(m => m.method === 'tools/call').at(-1);
    const token = call.params._meta.progressToken;
    check(token !== undefined, `no progressToken in ${JSON.stringify(call)}`, t);
    const answered = log.received.findIndex(m => m.id === call.id && 'result' in m);
    const reports = log.received
        .map((m, i) => ({ m, i }))
        .filter(({ m }) => m.method === 'notifications/progress' && m.params.progressToken === token);
    check(answered > 0 && reports.every(({ i }) => i < answered), 'progress after the response on the wire', t);
    const wire = reports.map(({ m }) => m.params.progress);
    check(wire[0] === 0 && wire.at(-1) === 800 && wire.length >= 5, `progress on the wire ${wire}`, t);
    check(wire.every((v, i) => i === 0 || v > wire[i - 1]), `progress not increasing: ${wire}`, t);
    check(reports.every(({ m }) => m.params.total === 800), `totals ${JSON.stringify(reports)}`, t);
    // The client: the same reports, except that 2.4.0 may lose the last
    // one. It handles a response at once but a notification a microtask
    // later, so a report read in the same chunk as the response finds its
    // handler gone ("unknown token", to onerror), though the wire order is
    // right (upstream: modelcontextprotocol/typescript-sdk#2580).
    const seen = progress.map(p => p.progress);
    check(seen.length >= wire.length - 1 && seen.every((v, i) => v === wire[i]), `progress seen ${seen}, sent ${wire}`, t);
    for (let i = seen.length; i < wire.length; i++) {
        const late = errors.findIndex(e => {
            const m = /unknown token: (\{.*\})$/.exec(e);
            const n = m && JSON.parse(m[1]);
            return n?.params?.progressToken === token && n.params.progress === wire[i];
        });
        check(late >= 0, `report ${wire[i]} neither delivered nor reported late: ${JSON.stringify(errors)}`, t);
        errors.splice(late, 1);
    }

    // Cancellation: abort the call after 300 ms.
    const done = () => t().split('archive search done').length - 1;
    const doneBefore = done();
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 300);
    let aborted = false;
    try {
        await client.callTool(ARCHIVE, { signal: abort.signal });
    } catch {
        aborted = true;
    }
    check(aborted, 'the archive search takes about 800 ms: the abort must end the call', t);
    const deadline = Date.now() + 5000;
    while (!t().includes('archive search cancelled') && Date.now() < deadline) {
        await new Promise(r => setTimeout(r, 20));
    }
    const scanned = /archive search cancelled after about (\d+) ms/.exec(t());
    check(scanned && Number(scanned[1]) < 800, 'the desk worker saw the cancellation', t);
    checkOpenVisits(await client.callTool({ name: 'board.listOpenVisits', arguments: {} }), t);
    await new Promise(r => setTimeout(r, 1000));
    check(done() === doneBefore, 'the cancelled search never completed', t);
}

async function overHttp() {
    const desk = await startHttpDesk('both');
    const t = desk.transcript;
    try {
        const recorder = recordingFetch();
        const errors = [];
        const client = pinnedClient(errors);
        const transport = new StreamableHTTPClientTransport(desk.url, { fetch: recorder.fetch });
        const log = recordMessages(transport);
        await client.connect(transport);
        await exercise(client, t, log, errors);
        await client.close();
        check(errors.length === 0, `client errors ${JSON.stringify(errors)}`, t);

        const methods = [];
        for (const x of recorder.exchanges) {
            check(x.method === 'POST', `a ${x.method} request (modern clients only POST)`, t);
            check(!('mcp-session-id' in x.headers), `a request with Mcp-Session-Id: ${JSON.stringify(x)}`, t);
            check(!('mcp-session-id' in (x.responseHeaders ?? {})), `a response with Mcp-Session-Id: ${JSON.stringify(x)}`, t);
            check(x.headers['mcp-protocol-version'] === MODERN, `MCP-Protocol-Version ${JSON.stringify(x.headers)}`, t);
            check(x.body?.params?._meta?.['io.modelcontextprotocol/protocolVersion'] === MODERN, `_meta ${JSON.stringify(x.body)}`, t);
            check(x.headers['mcp-method'] === x.body.method, `Mcp-Method ${JSON.stringify(x.headers)}`, t);
            methods.push(x.body.method);
        }
        check(methods[0] === 'server/discover', `methods ${methods}`, t);
        // On HTTP closing the stream is the cancellation: nothing is POSTed.
        check(!methods.includes('initialize') && !methods.includes('notifications/cancelled'), `methods ${methods}`, t);
        const calls = recorder.exchanges.filter(x => x.body.method === 'tools/call');
        check(calls.every(x => x.headers['mcp-name'] === x.body.params.name), 'Mcp-Name on every tools/call', t);
        const started = t().match(/MCP session stateless-[0-9a-f]+ for /g) ?? [];
        const ended = t().match(/MCP session stateless-[0-9a-f]+ ended: its runtime is closed/g) ?? [];
        check(started.length >= 5 && started.length === ended.length, `runtimes ${started.length}, ended ${ended.length}`, t);
        console.log(`HTTP: ${methods.length} stateless POSTs (${methods.join(', ')})`);
    } finally {
        await desk.stop();
    }
}

async function overStdio() {
    let stderr = '';
    const t = () => stderr;
    const transport = new StdioClientTransport({ command: DESK, args: stdioArgs('both'), cwd: REPO, stderr: 'pipe' });
    transport.stderr.setEncoding('utf8').on('data', d => (stderr += d));
    const log = recordMessages(transport);
    const errors = [];
    const client = pinnedClient(errors);
    await client.connect(transport);
    try {
        await exercise(client, t, log, errors);
        check(errors.length === 0, `client errors ${JSON.stringify(errors)}`, t);
        const methods = log.sent.map(m => m.method);
        check(!methods.includes('initialize'), `methods ${methods}`, t);
        const cancelled = log.sent.filter(m => m.method === 'notifications/cancelled');
        check(cancelled.length === 1, `notifications/cancelled sent: ${JSON.stringify(cancelled)}`, t);
        // No response to the cancelled request (2026-07-28, "Cancellation").
        const id = cancelled[0].params.requestId;
        check(!log.received.some(m => m.id === id), `the cancelled request ${id} was answered`, t);
        console.log(`stdio: ${methods.length} messages sent (${methods.join(', ')})`);
    } finally {
        await client.close();
    }
}

run('v2 client pinned to 2026-07-28 over Streamable HTTP and stdio', async () => {
    await overHttp();
    await overStdio();
});
