// The TypeScript v2 client (@modelcontextprotocol/client 2.4.0) pinned to
// MCP 2026-07-28 (`versionNegotiation: {mode: {pin: '2026-07-28'}}`) over
// Streamable HTTP against the desk serving both eras: it discovers, lists
// and calls tools statelessly (no Mcp-Session-Id either way, no
// `initialize`, no GET stream), gets the archive search's progress on the
// call's own stream, and cancels a slow call by aborting it, which stops
// the desk's worker.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { FIRST_TOOLS, MODERN, check, checkOpenVisits, recordingFetch, run, startHttpDesk } from './lib.mjs';

run('v2 client pinned to 2026-07-28 over Streamable HTTP', async () => {
    const desk = await startHttpDesk('both');
    const t = desk.transcript;
    try {
        const recorder = recordingFetch();
        const client = new Client(
            { name: 'ts-v2', version: '2.4.0' },
            { versionNegotiation: { mode: { pin: MODERN } } }
        );
        const transport = new StreamableHTTPClientTransport(desk.url, { fetch: recorder.fetch });
        await client.connect(transport);
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

        // Progress: every 100 ms of the 800 ms archive scan, increasing.
        const progress = [];
        const archive = await client.callTool(
            { name: 'visits.search', arguments: { query: 'cooler', includeArchive: true } },
            { onprogress: p => progress.push(p) }
        );
        check(archive.isError !== true && archive.structuredContent.archive.length > 0, JSON.stringify(archive), t);
        const values = progress.map(p => p.progress);
        check(values[0] === 0 && values.at(-1) === 800 && values.length >= 5, `progress ${values}`, t);
        check(values.every((v, i) => i === 0 || v > values[i - 1]), `progress not increasing: ${values}`, t);
        check(progress.every(p => p.total === 800), `totals ${JSON.stringify(progress)}`, t);

        // Cancellation: abort the call after 300 ms; the client closes the
        // call's stream (2026-07-28: that is the cancellation on HTTP).
        const done = () => t().split('archive search done').length - 1;
        const doneBefore = done();
        const abort = new AbortController();
        setTimeout(() => abort.abort(), 300);
        let aborted = false;
        try {
            await client.callTool(
                { name: 'visits.search', arguments: { query: 'cooler', includeArchive: true } },
                { signal: abort.signal }
            );
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
        await client.close();

        // Stateless on the wire.
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
        check(!methods.includes('initialize') && !methods.includes('notifications/cancelled'), `methods ${methods}`, t);
        const calls = recorder.exchanges.filter(x => x.body.method === 'tools/call');
        check(calls.every(x => x.headers['mcp-name'] === x.body.params.name), 'Mcp-Name on every tools/call', t);
        const started = t().match(/MCP session stateless-[0-9a-f]+ for /g) ?? [];
        const ended = t().match(/MCP session stateless-[0-9a-f]+ ended: its runtime is closed/g) ?? [];
        check(started.length >= 5 && started.length === ended.length, `runtimes ${started.length}, ended ${ended.length}`, t);
        console.log(`methods sent: ${methods.join(', ')}`);
    } finally {
        await desk.stop();
    }
});
