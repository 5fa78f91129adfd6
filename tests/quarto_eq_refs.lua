--[[
Quarto's equation cross-references for plain pandoc (Quarto cannot be installed here, nor pandoc-crossref).

Quarto's rules (https://quarto.org/docs/authoring/cross-references.html#equations): a display equation
labelled `$$ ... $$ {#eq-name}` is numbered in the order of the document and shows its number beside it
(HTML: `\qquad(N)` at the end of the math, inside a span with the label as its id); `@eq-name` renders as
"Equation N" linking to it, `[-@eq-name]` as "N" alone. A reference to a label no equation of the document
defines renders as Quarto renders it, `?@eq-name` in bold, and is written to stderr; a label defined twice is
an error. Used by tests/test_chapter_fragment.py.
]]

local numbers = {}
local count = 0

local function label_of(el)
  if el and el.t == "Str" then
    return el.text:match("^{#(eq%-[%w%-_]+)}$")
  end
  return nil
end

local function number_displays(inlines)
  local out = pandoc.List()
  local i = 1
  while i <= #inlines do
    local el = inlines[i]
    local j = i + 1
    if el.t == "Math" and el.mathtype == "DisplayMath" then
      if inlines[j] and (inlines[j].t == "Space" or inlines[j].t == "SoftBreak") then
        j = j + 1
      end
      local label = label_of(inlines[j])
      if label then
        if numbers[label] then
          error("equation label " .. label .. " is defined twice")
        end
        count = count + 1
        numbers[label] = count
        el.text = el.text:gsub("%s+$", "") .. " \\qquad(" .. count .. ")"
        out:insert(pandoc.Span({el}, pandoc.Attr(label)))
        i = j + 1
      else
        out:insert(el)
        i = i + 1
      end
    else
      out:insert(el)
      i = i + 1
    end
  end
  return out
end

local function cite(el)
  local parts = pandoc.List()
  for k, c in ipairs(el.citations) do
    local id = c.id
    if id:sub(1, 3) ~= "eq-" then
      return nil                      -- a bibliography citation: not ours
    end
    if k > 1 then
      parts:insert(pandoc.Str(","))
      parts:insert(pandoc.Space())
    end
    local n = numbers[id]
    if n then
      local text = tostring(n)
      if c.mode ~= "SuppressAuthor" then
        text = "Equation\u{a0}" .. text
      end
      parts:insert(pandoc.Link({pandoc.Str(text)}, "#" .. id, "", pandoc.Attr("", {"quarto-xref"})))
    else
      io.stderr:write("WARNING: unresolved equation reference @" .. id .. "\n")
      parts:insert(pandoc.Strong({pandoc.Str("?@" .. id)}))
    end
  end
  return parts
end

return {
  {
    Para = function(el) el.content = number_displays(el.content); return el end,
    Plain = function(el) el.content = number_displays(el.content); return el end,
  },
  { Cite = cite },
}
