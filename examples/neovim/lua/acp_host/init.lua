-- acp_host: a small Neovim plugin on libacp_host (the C ABI of acp-host) through LuaJIT's FFI.
--
-- One host per client: it spawns an ACP agent, opens a session, streams the agent's message text
-- into a scratch buffer, answers permission requests, and serves the agent's fs/* requests itself
-- (an open buffer's unsaved text for reads). Everything runs on Neovim's main thread: the host's
-- event fd is watched with a libuv poll handle (vim.loop.new_poll) and events are pulled with
-- acph_host_try_next_event. No library thread ever calls into Lua ("services": "events" delivers
-- the fs requests as service_requested events instead of a callback).
local ffi = require('ffi')

local M = {}

local defaults = {
  -- libacp_host: a path, or a name for ffi.load ('acp_host' finds libacp_host.so on the loader path).
  lib = nil,
  -- bindings/lua/acp_host_cdef.lua (generated from include/acp_host.h).
  cdef = nil,
  -- The agent: { command = '...', args = { ... }, env = { NAME = 'value' } }.
  agent = nil,
  -- The session's working directory (absolute); default: Neovim's cwd.
  cwd = nil,
  -- 'first_allow': answer every permission request with its first allow option (deterministic);
  -- 'ask': vim.ui.select among the offered options (cancel = deny).
  permission = 'ask',
  -- Extra host config fields (docs/FFI.md), e.g. { terminal = 'disabled' }.
  config = {},
}

local lib -- the loaded library (one per Neovim)

local function script_dir()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h')
end

-- The cdef file: an explicit path, $ACPH_LUA_CDEF, an installed copy on package.path
-- (scripts/install-c puts it in share/lua/5.1), or the repository's bindings/lua.
local function load_cdef(path)
  path = path or os.getenv('ACPH_LUA_CDEF')
  if path then
    return dofile(path)
  end
  local ok, mod = pcall(require, 'acp_host_cdef')
  if ok then
    return mod
  end
  return dofile(script_dir() .. '/../../../../bindings/lua/acp_host_cdef.lua')
end

local function load_lib(opts)
  if lib then
    return lib
  end
  local acph = load_cdef(opts.cdef)
  local l = ffi.load(opts.lib or os.getenv('ACPH_LIB') or 'acp_host')
  if l.acph_abi_version() ~= acph.ABI_VERSION then
    error(('acp_host: libacp_host ABI %d, this cdef is for ABI %d'):format(l.acph_abi_version(), acph.ABI_VERSION))
  end
  lib = l
  return lib
end

-- Raise a Lua error for a failed call, with the library's message (and free the error).
local function check(what, status, errp)
  if status == lib.ACPH_STATUS_OK then
    return
  end
  local msg = ffi.string(lib.acph_status_str(status))
  if errp[0] ~= nil then
    msg = msg .. ': ' .. ffi.string(errp[0].message)
    lib.acph_error_free(errp[0])
  end
  error(('acp_host: %s: %s'):format(what, msg), 2)
end

local function errbox()
  return ffi.new('acph_error *[1]')
end

local Client = {}
Client.__index = Client

--- Start a host and spawn the agent. `on_ready(client)` runs once the session is open.
function M.start(user_opts, on_ready)
  local opts = vim.tbl_deep_extend('force', defaults, user_opts or {})
  assert(opts.agent and opts.agent.command, 'acp_host: opts.agent.command is required')
  load_lib(opts)
  local self = setmetatable({
    opts = opts,
    calls = {}, -- call id -> function(ok, result_or_error)
    permissions = {}, -- what was answered: { title, option }
    served = {}, -- fs requests served: { method, path, from = 'buffer' | 'disk' }
    events = {}, -- every event's decoded JSON, in order (for tests and :messages)
    session = nil,
    agent = nil,
    exited = false,
  }, Client)
  local config = vim.tbl_extend('force', {
    permission = 'manual',
    fs = 'embedder',
    services = 'events',
  }, opts.config)
  local text = vim.json.encode(config)
  local hostp, errp = ffi.new('acph_host *[1]'), errbox()
  check('acph_host_new', lib.acph_host_new(text, #text, hostp, errp), errp)
  self.host = hostp[0]
  self.buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_option(self.buf, 'filetype', 'markdown')
  pcall(vim.api.nvim_buf_set_name, self.buf, 'acp://' .. tostring(self.buf))

  local fd, fderr = ffi.new('int[1]'), errbox()
  check('acph_host_event_fd', lib.acph_host_event_fd(self.host, fd, fderr), fderr)
  self.poll = vim.loop.new_poll(fd[0])
  self.poll:start('r', function(perr)
    -- A failing drain would fire again at once (the fd stays readable): stop watching instead.
    local ok, err = pcall(self._drain, self)
    if perr or not ok then
      self.poll:stop()
      vim.schedule(function()
        self:_fail('event loop', { message = tostring(perr or err) })
      end)
    end
  end)

  local spec = vim.json.encode(opts.agent)
  self:_call('spawn', function(callp, e)
    return lib.acph_host_spawn(self.host, spec, #spec, callp, e)
  end, function(ok, res)
    if not ok then
      return self:_fail('spawn', res)
    end
    self.agent = res.agent
    local so = vim.json.encode({ cwd = opts.cwd or vim.loop.cwd() })
    self:_call('new_session', function(callp, e)
      return lib.acph_agent_new_session(self.host, self.agent, so, #so, callp, e)
    end, function(ok2, res2)
      if not ok2 then
        return self:_fail('new_session', res2)
      end
      self.session = res2.session
      if on_ready then
        on_ready(self)
      end
    end)
  end)
  return self
end

--- Send a prompt; the agent's text streams into `self.buf`. `on_done(ok, result)` at the end
--- (`result.stopReason`, or the error).
function Client:prompt(text, on_done)
  assert(self.session, 'acp_host: the session is not open yet')
  self:_append('\n> ' .. text:gsub('\n', '\n> ') .. '\n\n')
  self:_call('prompt', function(callp, e)
    return lib.acph_session_prompt_text(self.host, self.session, text, #text, callp, e)
  end, function(ok, res)
    if on_done then
      on_done(ok, res)
    end
  end)
end

--- Shut the agent down and free the host (blocks briefly: the agent gets stdin EOF, then a grace).
function Client:stop()
  if self.poll then
    self.poll:stop()
    self.poll:close()
    self.poll = nil
  end
  if self.host ~= nil then
    lib.acph_host_free(self.host)
    self.host = nil
  end
end

-- Start an asynchronous call; `done(ok, result_or_error)` runs at its call_completed event, which
-- also gives the call id back (acph_call_free: the host keeps every call's outcome until then).
function Client:_call(what, start, done)
  local callp, errp = ffi.new('uint64_t[1]'), errbox()
  check(what, start(callp, errp), errp)
  self.calls[tonumber(callp[0])] = done
end

function Client:_fail(what, err)
  self.failed = { what = what, error = err }
  vim.notify(('acp_host: %s failed: %s'):format(what, err and err.message or '?'), vim.log.levels.ERROR)
end

-- Called by libuv when the event fd is readable (a "fast" context: no Neovim API calls). Pull
-- everything waiting (that is what makes the level-triggered fd quiet again), copy it out of
-- the C structs, and handle it on the main loop.
function Client:_drain()
  if self.host == nil then
    return
  end
  local evp = ffi.new('acph_event *[1]')
  local batch = {}
  while true do
    local st = lib.acph_host_try_next_event(self.host, evp)
    if st ~= lib.ACPH_STATUS_OK then
      -- empty: drained; closed: the stream ended (the fd stays readable: stop watching it).
      if st ~= lib.ACPH_STATUS_EMPTY and self.poll then
        self.poll:stop()
      end
      break
    end
    local ev = evp[0]
    batch[#batch + 1] = {
      kind = tonumber(ev.kind),
      request = tonumber(ev.request),
      call = tonumber(ev.call),
      session = tonumber(ev.session),
      json = ffi.string(ev.json, ev.json_len),
    }
    lib.acph_event_free(ev)
  end
  if #batch > 0 then
    vim.schedule(function()
      for _, e in ipairs(batch) do
        self:_handle(e)
      end
    end)
  end
end

function Client:_handle(e)
  local ev = vim.json.decode(e.json)
  self.events[#self.events + 1] = ev
  local data = ev.data
  if e.kind == lib.ACPH_EVENT_CALL_COMPLETED then
    local done = self.calls[e.call]
    self.calls[e.call] = nil
    if done and self.host ~= nil then
      local errp = errbox()
      check('acph_call_free', lib.acph_call_free(self.host, e.call, errp), errp)
    end
    if done then
      if data.ok then
        done(true, data.result)
      else
        done(false, data.error)
      end
    end
  elseif e.kind == lib.ACPH_EVENT_SESSION_UPDATE and e.session == self.session then
    if data.sessionUpdate == 'agent_message_chunk' and data.content and data.content.type == 'text' then
      self:_append(data.content.text)
    end
  elseif e.kind == lib.ACPH_EVENT_PERMISSION_REQUESTED then
    self:_permission(e.request, data)
  elseif e.kind == lib.ACPH_EVENT_SERVICE_REQUESTED then
    self:_serve(e.request, data.method, data.params)
  elseif e.kind == lib.ACPH_EVENT_AGENT_EXITED then
    self.exited = true
  end
end

-- Append streamed text to the scratch buffer (text may end mid-line).
function Client:_append(text)
  local buf = self.buf
  local pieces = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(buf)
  local tail = vim.api.nvim_buf_get_lines(buf, last - 1, last, false)[1] or ''
  pieces[1] = tail .. pieces[1]
  vim.api.nvim_buf_set_lines(buf, last - 1, last, false, pieces)
end

function Client:_answer_permission(id, title, option)
  self.permissions[#self.permissions + 1] = { title = title, option = option }
  local errp = errbox()
  local st = lib.acph_permission_respond(self.host, id, option, option and #option or 0, errp)
  -- Already resolved (a timeout or the turn's end won the race) is not an error here.
  if st ~= lib.ACPH_STATUS_OK and st ~= lib.ACPH_STATUS_ALREADY_RESOLVED then
    check('acph_permission_respond', st, errp)
  elseif errp[0] ~= nil then
    lib.acph_error_free(errp[0])
  end
end

function Client:_permission(id, data)
  local title = data.toolCall and data.toolCall.title or 'permission'
  local options = data.options or {}
  if self.opts.permission == 'first_allow' then
    for _, o in ipairs(options) do
      if o.kind == 'allow_once' or o.kind == 'allow_always' then
        return self:_answer_permission(id, title, o.optionId)
      end
    end
    return self:_answer_permission(id, title, nil)
  end
  vim.ui.select(options, {
    prompt = 'Agent asks: ' .. title,
    format_item = function(o)
      return o.name
    end,
  }, function(choice)
    self:_answer_permission(id, title, choice and choice.optionId or nil)
  end)
end

-- `path` with symlinks resolved; for a file not on disk (an unsaved buffer's), its directory's.
-- The host may name a file by its resolved path while the buffer has the path it was opened by.
local function resolved(path)
  local real = vim.loop.fs_realpath(path)
  if real then
    return real
  end
  local dir = vim.loop.fs_realpath(vim.fn.fnamemodify(path, ':h'))
  return dir and (dir .. '/' .. vim.fn.fnamemodify(path, ':t')) or path
end

-- The loaded buffer showing `path`, if any (compared after resolving symlinks).
local function buffer_for(path)
  local want = resolved(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      local name = vim.api.nvim_buf_get_name(b)
      if name ~= '' and (name == path or resolved(name) == want) then
        return b
      end
    end
  end
end

-- Lines `line` (1-based) .. `line + limit - 1` of `text`, as fs/read_text_file asks.
local function slice(text, line, limit)
  if line == nil and limit == nil then
    return text
  end
  local lines = vim.split(text, '\n', { plain = true })
  local first = line or 1
  local last = limit and (first + limit - 1) or #lines
  local out = {}
  for i = first, math.min(last, #lines) do
    out[#out + 1] = lines[i]
  end
  local s = table.concat(out, '\n')
  if last < #lines then
    s = s .. '\n'
  end
  return s
end

local function null_to_nil(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

function Client:_respond(id, result)
  local errp = errbox()
  local st = lib.acph_service_respond(self.host, id, result, #result, errp)
  -- Already resolved: the agent went away meanwhile; nothing to do.
  if st ~= lib.ACPH_STATUS_OK and st ~= lib.ACPH_STATUS_ALREADY_RESOLVED then
    check('acph_service_respond', st, errp)
  elseif errp[0] ~= nil then
    lib.acph_error_free(errp[0])
  end
end

function Client:_refuse(id, code, message)
  local errp = errbox()
  lib.acph_service_fail(self.host, id, code, message, #message, errp)
  if errp[0] ~= nil then
    lib.acph_error_free(errp[0])
  end
end

-- The agent's fs requests (the host already confined the path to the session's roots and
-- applied the policy). Reads prefer an open buffer's unsaved text; writes go into an open buffer
-- (left modified: the user saves) or else to the file.
function Client:_serve(id, method, params)
  local path = params.path
  if method == 'fs/read_text_file' then
    local b = buffer_for(path)
    local text, from
    if b then
      local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
      text = table.concat(lines, '\n')
      if vim.api.nvim_buf_get_option(b, 'eol') or vim.api.nvim_buf_get_option(b, 'fixeol') then
        text = text .. '\n'
      end
      from = 'buffer'
    else
      local f = io.open(path, 'rb')
      if not f then
        return self:_refuse(id, -32002, 'file not found: ' .. path)
      end
      text = f:read('*a')
      f:close()
      from = 'disk'
    end
    self.served[#self.served + 1] = { method = method, path = path, from = from }
    return self:_respond(id, vim.json.encode({ content = slice(text, null_to_nil(params.line), null_to_nil(params.limit)) }))
  elseif method == 'fs/write_text_file' then
    local b = buffer_for(path)
    if b then
      local lines = vim.split(params.content, '\n', { plain = true })
      if lines[#lines] == '' then
        table.remove(lines)
      end
      vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
      self.served[#self.served + 1] = { method = method, path = path, from = 'buffer' }
    else
      local f = io.open(path, 'wb')
      if not f then
        return self:_refuse(id, -32603, 'cannot write ' .. path)
      end
      f:write(params.content)
      f:close()
      self.served[#self.served + 1] = { method = method, path = path, from = 'disk' }
    end
    return self:_respond(id, '{}')
  end
  self:_refuse(id, -32601, method .. ' is not served by this plugin')
end

--- Show the client's buffer in a split.
function Client:show()
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, self.buf)
end

M.Client = Client

-- The client of :AcpPrompt (plugin/acp_host.lua), started on first use from M.setup's options.
local shared
local shared_opts

--- Options for :AcpPrompt (see `defaults`).
function M.setup(opts)
  shared_opts = opts
end

--- :AcpPrompt {text}: start the client when needed, show its buffer, send the prompt.
function M.prompt(text)
  local function send(c)
    c:prompt(text, function(ok, res)
      if not ok then
        c:_fail('prompt', res)
      end
    end)
  end
  if shared and shared.session then
    return send(shared)
  end
  if shared then
    return vim.notify('acp_host: the agent is still starting', vim.log.levels.WARN)
  end
  shared = M.start(shared_opts or {}, send)
  shared:show()
end

--- Stop the :AcpPrompt client (also on VimLeavePre).
function M.stop()
  if shared then
    shared:stop()
    shared = nil
  end
end

return M
