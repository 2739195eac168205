"""Pinocchio's own rigid-contact solver set up on a model's contacts: the reference that
the contact benchmark and the contact tests compare our kernels with (no code shared with
them: Pinocchio's ``constraintDynamics``, ``impulseDynamics`` and their derivatives)."""

from __future__ import annotations

import pinocchio as pin


def rigid_contacts(pm, frames, surfaces=()):
    """(models, datas, data, settings) for Pinocchio's constraint and impulse dynamics with a
    contact at each of ``frames`` of the Pinocchio model ``pm``: a point contact (CONTACT_3D,
    LOCAL_WORLD_ALIGNED, as our ``Contact3D``), or for the frames in ``surfaces`` a flat one
    (CONTACT_6D, LOCAL_WORLD_ALIGNED, as our ``Contact6D``); exact settings (accuracy 1e-14,
    no proximal term)."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for f in frames:
        fr = pm.frames[pm.getFrameId(f)]
        kind = pin.ContactType.CONTACT_6D if f in surfaces else pin.ContactType.CONTACT_3D
        cm = pin.RigidConstraintModel(kind, pm, fr.parentJoint, fr.placement,
                                      pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        models.append(cm)
        datas.append(cm.createData())
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, models, datas)
    return models, datas, data, pin.ProximalSettings(1e-14, 0.0, 1)
