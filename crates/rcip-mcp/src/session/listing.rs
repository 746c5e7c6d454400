//! `tools/list` and `notifications/tools/list_changed`: tools from the
//! snapshot (names, annotations, `_meta`), the filter and pagination, the
//! tool naming maps, and the decision whether a revision changed the list.

use super::*;

impl Inner {
    /// The tool name of a capability.
    pub(super) fn tool_name<'a>(&'a self, capability_id: &'a str) -> &'a str {
        match &self.names {
            Some((to_tool, _)) => to_tool.get(capability_id).map_or(capability_id, String::as_str),
            None => capability_id,
        }
    }

    /// The capability a tool name calls.
    pub(super) fn capability_of<'a>(&'a self, tool: &'a str) -> Option<&'a str> {
        match &self.names {
            Some((_, to_capability)) => to_capability.get(tool).map(String::as_str),
            None => Some(tool),
        }
    }

    /// The tools of `snapshot` that pass the session's filter.
    pub(super) fn tools_of(&self, snapshot: &Snapshot, with_revision: bool) -> Vec<Value> {
        let list = snapshot.list_json(&self.options.filter);
        let entries = rcip::json::parse_str(&list, &Limits::UNLIMITED).unwrap_or(Value::Array(Vec::new()));
        let revision = with_revision.then(|| snapshot.revision());
        match entries {
            Value::Array(items) => items
                .iter()
                .map(|e| {
                    let mut tool = tools::tool_from_entry(e, revision);
                    if self.names.is_some() {
                        let id = e.get("id").and_then(Value::as_str).unwrap_or_default();
                        let name = self.tool_name(id);
                        if name != id {
                            tool["name"] = Value::String(name.to_string());
                            tool["_meta"]["rcip/capabilityId"] = Value::String(id.to_string());
                        }
                    }
                    tool
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// What tools/list returns at `snapshot`, without the revision, as
    /// text.
    pub(super) fn tools_text(&self, snapshot: &Snapshot) -> String {
        Value::Array(self.tools_of(snapshot, false)).to_string()
    }

    pub(super) fn tools_list(&self, client: &Client, params: Option<Value>) -> Reply {
        let mut p = params_object(params)?;
        let modern = p.remove("_meta").is_some_and(|m| {
            m.get(modern::META_PROTOCOL_VERSION).and_then(Value::as_str) == Some(modern::MCP_MODERN_REVISION)
        });
        // The last snapshot of a closed runtime stays readable, but offering
        // its tools (some still marked bound) would invite calls that fail.
        if client.is_closed() {
            return Err(internal(HostError::Closed));
        }
        let snapshot = client.snapshot().map_err(internal)?;
        let mut tools = self.tools_of(&snapshot, true);
        if !modern && self.state.lock().protocol == "2025-03-26" {
            // 2025-03-26 has no structured tool output ("Tools": no
            // outputSchema, no structuredContent).
            for t in &mut tools {
                if let Value::Object(m) = t {
                    m.remove("outputSchema");
                }
            }
        }
        let start = match p.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => match (
                self.options.page_size,
                c.strip_prefix("rcip-").and_then(|n| n.parse::<usize>().ok()),
            ) {
                (Some(_), Some(n)) if n <= tools.len() => n,
                _ => return Err((INVALID_PARAMS, format!("Invalid params: unknown cursor {c:?}"))),
            },
            Some(_) => return Err((INVALID_PARAMS, "Invalid params: \"cursor\" must be a string".into())),
        };
        let mut result = Map::new();
        match self.options.page_size {
            Some(size) => {
                let end = (start + size).min(tools.len());
                result.insert("tools".into(), Value::Array(tools[start..end].to_vec()));
                if end < tools.len() {
                    result.insert("nextCursor".into(), Value::String(format!("rcip-{end}")));
                }
            }
            None => {
                result.insert("tools".into(), Value::Array(tools));
            }
        }
        if modern {
            // 2026-07-28 "Caching": every `tools/list` page carries
            // `ttlMs` and the same `cacheScope` (options `ttlMs` and
            // `cacheScope`; private by default, because a host's
            // per-request runtime may offer different tools to different
            // callers). Tools come in catalog order on every page
            // ("Tools": deterministic order).
            result.insert("ttlMs".into(), json!(self.options.ttl_ms.unwrap_or(MODERN_TTL_MS)));
            result.insert("cacheScope".into(), json!(self.options.cache_scope.as_str()));
        }
        Ok(Value::Object(result))
    }

    /// A snapshot revision: tells the client when what tools/list returns
    /// changed. Decided from what changed: a revision whose live state
    /// (context, bindings, availability) equals the last one compared costs
    /// no rendering, whatever the catalog's size; only a changed state
    /// renders the tool list to compare it (**rcip**).
    pub(super) fn on_revision(&self) {
        let Ok(snapshot) = self.client.snapshot() else {
            return;
        };
        let seen = {
            let mut st = self.state.lock();
            if st.closed || !st.initialized {
                return;
            }
            match &mut st.tools_seen {
                Some((seen, _)) if seen.revision() >= snapshot.revision() => return,
                Some((seen, _)) if seen.same_live_state(&snapshot) => {
                    *seen = snapshot;
                    return;
                }
                Some((seen, text)) => (seen.clone(), text.clone()),
                None => {
                    st.tools_seen = Some((snapshot, None));
                    return;
                }
            }
        };
        let (seen, seen_text) = seen;
        let old = seen_text.unwrap_or_else(|| self.tools_text(&seen));
        let new = self.tools_text(&snapshot);
        let changed = old != new;
        let send = {
            let mut st = self.state.lock();
            if st.closed {
                return;
            }
            // Another thread may have compared a newer revision meanwhile.
            if st
                .tools_seen
                .as_ref()
                .is_some_and(|(s, _)| s.revision() >= snapshot.revision())
            {
                return;
            }
            st.tools_seen = Some((snapshot, Some(new)));
            if !changed {
                return;
            }
            if st.ready {
                true
            } else {
                st.list_changed_pending = true;
                false
            }
        };
        if send {
            self.send(
                jsonrpc::notification("notifications/tools/list_changed", None),
                Kind::ListChanged,
            );
        }
    }
}

/// Checks `naming` against `catalog` as a session would (for a server,
/// before any session exists).
#[cfg(feature = "http")]
pub(crate) fn check_tool_names(catalog: &Catalog, naming: &ToolNames) -> Result<(), String> {
    tool_names(catalog, naming).map(|_| ())
}

/// The two maps of a naming other than the capability ids: capability id
/// to tool name (only the ids it renames), and tool name to capability id.
pub(super) type ToolNameMaps = (HashMap<String, String>, HashMap<String, String>);

/// The tool names other than the capability ids for `naming`, checked:
/// no two capabilities share a name, no name is longer than
/// [`MAX_TOOL_NAME_CHARS`] (in the `safe` and map namings) or empty, and a
/// map names only capabilities of the catalog.
pub(super) fn tool_names(catalog: &Catalog, naming: &ToolNames) -> Result<Option<ToolNameMaps>, String> {
    if *naming == ToolNames::Ids {
        return Ok(None);
    }
    if let ToolNames::Map(map) = naming {
        if let Some((id, _)) = map.iter().find(|(id, _)| catalog.capability(id).is_none()) {
            return Err(format!(
                "toolNames maps \"{id}\", which is not a capability of the catalog"
            ));
        }
    }
    let mut to_tool = HashMap::new();
    let mut to_capability: HashMap<String, String> = HashMap::new();
    for c in catalog.capabilities() {
        let name = tool_name_for(naming, &c.id).into_owned();
        if name.is_empty() || name.chars().count() > MAX_TOOL_NAME_CHARS {
            return Err(format!(
                "the tool name of capability \"{}\" (\"{name}\") must have 1 to {MAX_TOOL_NAME_CHARS} characters",
                c.id
            ));
        }
        if let Some(other) = to_capability.get(&name) {
            return Err(format!(
                "capabilities \"{other}\" and \"{}\" would both be the tool \"{name}\"",
                c.id
            ));
        }
        to_capability.insert(name.clone(), c.id.clone());
        if name != c.id {
            to_tool.insert(c.id.clone(), name);
        }
    }
    // A name that equals another capability's id is that capability's
    // name only: the reverse map decides, and ids renamed away are no
    // tool names.
    Ok(Some((to_tool, to_capability)))
}
