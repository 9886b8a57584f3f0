//! lib/win_minmax.c: the kernel's windowed min/max filter (BBR's bandwidth filter).

/// lib/win_minmax.c: windowed max keeping the best three samples.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MinMax {
    s: [(u32, u32); 3], // (t, v)
}

impl MinMax {
    pub(crate) fn get(&self) -> u32 {
        self.s[0].1
    }

    pub(crate) fn reset(&mut self, t: u32, v: u32) -> u32 {
        self.s = [(t, v); 3];
        v
    }

    /// minmax_subwin_update()
    fn subwin_update(&mut self, win: u32, val: (u32, u32)) -> u32 {
        let dt = val.0.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s = [self.s[1], self.s[2], val];
            if val.0.wrapping_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }

    /// minmax_running_max()
    pub(crate) fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = (t, meas);
        if meas >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, meas);
        }
        if meas >= self.s[1].1 {
            self.s[1] = val;
            self.s[2] = val;
        } else if meas >= self.s[2].1 {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}
